//! Who sent a request ([`Who`]): the classes of the "refused by class" table.

use crate::classify::{AgentInfo, Device, Identity};

/// Who sent a request, for the "refused by class" table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Who {
    /// Your own services: an address, agent or user that a candidate exempts or that
    /// `--internal` names.
    Internal,
    /// Logged-in users (a user name, or a session cookie where configured).
    Identified,
    /// Crawlers and other bots that say so in their User-Agent.
    DeclaredBot,
    /// Browsers (phones, desktops, other devices) that are not identified.
    Browser,
    /// Tools, libraries and requests without a recognisable agent.
    Other,
}

impl Who {
    /// Every class, in report order.
    pub const ALL: [Who; 5] = [
        Who::Internal,
        Who::Identified,
        Who::DeclaredBot,
        Who::Browser,
        Who::Other,
    ];

    /// The class of a request: internal first, then identified, declared bot,
    /// browser-like, other.
    pub fn of(internal: bool, identity: Identity, agent: &AgentInfo) -> Who {
        if internal {
            Who::Internal
        } else if identity == Identity::Identified {
            Who::Identified
        } else if agent.bot.is_some() || agent.device == Device::Bot {
            Who::DeclaredBot
        } else if matches!(
            agent.device,
            Device::Ios | Device::Android | Device::Desktop | Device::Other
        ) {
            Who::Browser
        } else {
            Who::Other
        }
    }

    /// Position in [`Who::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The short name used in JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            Who::Internal => "internal",
            Who::Identified => "identified",
            Who::DeclaredBot => "declared-bot",
            Who::Browser => "browser",
            Who::Other => "other",
        }
    }

    /// The name shown in reports.
    pub fn label(self) -> &'static str {
        match self {
            Who::Internal => "internal / exempt-listed",
            Who::Identified => "identified users",
            Who::DeclaredBot => "declared bots",
            Who::Browser => "anonymous browser-like",
            Who::Other => "other (tools, no agent)",
        }
    }
}
