//! How a task's connections are kept to the proxy on this machine: its own network
//! namespace, Landlock's TCP rules with the socket filter, or only the variables.

use std::sync::OnceLock;

use serde::Serialize;

use crate::net::{netns, sockets};
use crate::profile::network::KernelFence;

/// How a task's connections are kept to the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Enforcement {
    /// The session's tasks in a network namespace of their own.
    Namespace { user_namespace: bool },
    /// Landlock TCP connect to the door's port, and the socket filter.
    Landlock { abi: i32 },
    /// Only the variables: nothing in the kernel.
    VariablesOnly { why: String },
}

impl Enforcement {
    pub fn name(&self) -> &'static str {
        match self {
            Enforcement::Namespace { .. } => "namespace",
            Enforcement::Landlock { .. } => "landlock",
            Enforcement::VariablesOnly { .. } => "variables-only",
        }
    }

    /// What a task can still reach without the proxy.
    pub fn still_open(&self) -> Vec<String> {
        match self {
            Enforcement::Namespace { .. } => vec![
                "pathname unix sockets that start listening after the session's namespaces were made (those listening then are hidden in its mount namespace unless a grant names them; Landlock before ABI 9 does not restrict connecting)".into(),
            ],
            Enforcement::Landlock { .. } => vec![
                "TCP to any address on the proxy's port number".into(),
                "pathname unix sockets that start listening after the session's namespaces were made (those listening then are hidden in its mount namespace unless a grant names them)".into(),
                "loopback services of this machine other than the proxy are closed too (Landlock decides by port, not address)".into(),
            ],
            Enforcement::VariablesOnly { why } => vec![format!(
                "everything: a program that ignores HTTP_PROXY connects directly ({why})"
            )],
        }
    }

    /// One line for `whalebox doctor` and the server's instructions.
    pub fn describe(&self) -> String {
        match self {
            Enforcement::Namespace {
                user_namespace: false,
            } => "a session's commands share a network namespace of their own: the proxy (and the profile's host_ports) is their only way out".into(),
            Enforcement::Namespace {
                user_namespace: true,
            } => "a session's commands share a (unprivileged) network namespace of their own: the proxy (and the profile's host_ports) is their only way out".into(),
            Enforcement::Landlock { abi } => format!(
                "no network namespaces here; Landlock (ABI {abi}) lets TCP connect to the proxy's port only, seccomp refuses UDP and raw sockets"
            ),
            Enforcement::VariablesOnly { why } => format!(
                "only the proxy variables, no kernel fence ({why}): a program that ignores them connects directly"
            ),
        }
    }
}

/// What this machine offers, found once per process (the namespace probe starts a
/// process; `whalebox doctor` asks it, outside every fence).
#[derive(Debug, Clone)]
struct Machine {
    landlock_abi: i32,
    socket_filter: Result<(), String>,
}

fn machine() -> &'static Machine {
    static FOUND: OnceLock<Machine> = OnceLock::new();
    FOUND.get_or_init(|| Machine {
        landlock_abi: crate::guard::landlock::kernel_abi(),
        socket_filter: sockets::filter().map(|_| ()),
    })
}

/// The enforcement `choice` gets on this machine, for a session with or without
/// Landlock (the fallback is a Landlock rule), where a probe says whether a network
/// namespace can be made (`whalebox doctor`).
pub fn detect(choice: KernelFence, landlock_on: bool) -> Enforcement {
    let namespace = match choice {
        KernelFence::Landlock => Err("[network] kernel = \"landlock\"".to_string()),
        _ => netns::probe().map(|made| made == netns::Made::WithUser),
    };
    detect_with(choice, landlock_on, namespace)
}

/// The enforcement `choice` gets, given whether the session's network namespace was
/// made (Ok: in a user namespace or not) or why not.
pub fn detect_with(
    choice: KernelFence,
    landlock_on: bool,
    namespace: Result<bool, String>,
) -> Enforcement {
    let m = machine();
    let landlock = || -> Result<Enforcement, String> {
        if !landlock_on {
            return Err("[landlock] mode = \"off\" leaves no Landlock fallback".into());
        }
        if m.landlock_abi < 4 {
            return Err(format!(
                "Landlock ABI {} has no TCP rules (needs 4)",
                m.landlock_abi
            ));
        }
        m.socket_filter.clone()?;
        Ok(Enforcement::Landlock {
            abi: m.landlock_abi,
        })
    };
    let namespace = || {
        namespace
            .clone()
            .map(|user_namespace| Enforcement::Namespace { user_namespace })
    };
    let found = match choice {
        KernelFence::Auto => {
            namespace().or_else(|ns| landlock().map_err(|ll| format!("{ns}; {ll}")))
        }
        KernelFence::Namespace => namespace(),
        KernelFence::Landlock => landlock(),
    };
    found.unwrap_or_else(|why| Enforcement::VariablesOnly { why })
}
