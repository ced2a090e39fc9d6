"""Writes fixtures/geo/country-test.mmdb: a small country database in the layout of
MaxMind's GeoLite2-Country and DB-IP's dbip-country-lite (country.iso_code,
country.names.en), for `logscope top --by country --asn-db`. The networks are the
documentation ranges (RFC 5737, RFC 3849), so the data is ours to ship.

    pip install mmdb-writer
    python3 tests/engines/make_country_mmdb.py fixtures/geo/country-test.mmdb
"""

import sys

from mmdb_writer import MMDBWriter
from netaddr import IPSet

NETWORKS = [
    ("192.0.2.0/25", "DE", "Germany"),
    ("192.0.2.128/25", "FR", "France"),
    ("198.51.100.0/24", "KR", "South Korea"),
    ("2001:db8:1::/48", "JP", "Japan"),
]


def main(out: str) -> None:
    w = MMDBWriter(
        ip_version=6,
        ipv4_compatible=True,
        database_type="logscope-test-country",
        languages=["en"],
        description="logscope test: documentation ranges only",
    )
    for net, iso, name in NETWORKS:
        w.insert_network(
            IPSet([net]),
            {"country": {"iso_code": iso, "names": {"en": name}}},
        )
    w.to_db_file(out)


if __name__ == "__main__":
    main(sys.argv[1])
