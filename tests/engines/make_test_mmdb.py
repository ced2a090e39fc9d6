"""Writes the test databases in fixtures/geo/, in the layouts of the databases users
have, for `logscope top --by country|asn --asn-db`:

* country-test.mmdb: MaxMind GeoLite2-Country's / DB-IP country lite's layout
  (country.iso_code, country.names.en);
* asn-test.mmdb: GeoLite2-ASN's / DB-IP ASN lite's layout (autonomous_system_number,
  autonomous_system_organization);
* ipinfo-test.mmdb: IPinfo lite's layout (country_code, country as a name, asn as
  `AS64496`, as_name).

The networks are documentation ranges (RFC 5737, RFC 3849) and the AS numbers the
documentation ones (RFC 5398), so the data is ours to ship.

    pip install mmdb-writer
    python3 tests/engines/make_test_mmdb.py fixtures/geo
"""

import os
import sys

from mmdb_writer import MMDBWriter, MmdbU32
from netaddr import IPSet

COUNTRIES = [
    ("192.0.2.0/25", "DE", "Germany"),
    ("192.0.2.128/25", "FR", "France"),
    ("198.51.100.0/24", "KR", "South Korea"),
    ("2001:db8:1::/48", "JP", "Japan"),
]

ASNS = [
    ("192.0.2.0/24", 64496, "EXAMPLE-HOSTING"),
    ("198.51.100.0/25", 64497, "EXAMPLE-RESIDENTIAL"),
    ("2001:db8:1::/48", 64498, "EXAMPLE-V6"),
]


def writer(kind: str) -> MMDBWriter:
    return MMDBWriter(
        ip_version=6,
        ipv4_compatible=True,
        database_type=kind,
        languages=["en"],
        description="logscope test: documentation ranges only",
    )


def main(out: str) -> None:
    w = writer("logscope-test-country")
    for net, iso, name in COUNTRIES:
        w.insert_network(IPSet([net]), {"country": {"iso_code": iso, "names": {"en": name}}})
    w.to_db_file(os.path.join(out, "country-test.mmdb"))
    w = writer("logscope-test-GeoLite2-ASN")
    for net, asn, org in ASNS:
        w.insert_network(
            IPSet([net]),
            {"autonomous_system_number": MmdbU32(asn), "autonomous_system_organization": org},
        )
    w.to_db_file(os.path.join(out, "asn-test.mmdb"))
    w = writer("ipinfo_lite")
    for (net, iso, name), (_, asn, org) in zip(COUNTRIES, ASNS):
        w.insert_network(
            IPSet([net]),
            {"country_code": iso, "country": name, "asn": f"AS{asn}", "as_name": org},
        )
    w.to_db_file(os.path.join(out, "ipinfo-test.mmdb"))


if __name__ == "__main__":
    main(sys.argv[1])
