//! What this process runs on, when that explains a missing fence: gVisor (GKE's agent
//! sandboxes run it by default) implements Linux in user space and has neither Landlock
//! nor seccomp user notification; WSL 1 translates system calls and has neither either.
//! Also which container engine, for the doctor's report. Read from files the runtimes
//! document or are known to fill: `/proc/version` and `/proc/cmdline` (gVisor names
//! itself there, or gives its fixed 2016 build date), `/run/.containerenv` (podman),
//! `/.dockerenv` (Docker), `KUBERNETES_SERVICE_HOST` (a Kubernetes pod).

use serde::Serialize;

/// The runtime, as far as it can be told.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Runtime {
    /// A kernel that is not Linux's own (`gVisor`, `WSL 1`), if detected.
    pub kernel: Option<&'static str>,
    /// The container engine or orchestrator, if detected.
    pub container: Option<&'static str>,
}

/// gVisor's `/proc/version` carries this build date, whatever version it claims.
const GVISOR_DATE: &str = "Sun Jan 10 15:06:54 PST 2016";

impl Runtime {
    pub fn detect() -> Runtime {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let exists = |p: &str| std::path::Path::new(p).exists();
        Runtime::from_facts(
            &read("/proc/version"),
            &read("/proc/cmdline"),
            exists("/run/.containerenv"),
            exists("/.dockerenv"),
            std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
        )
    }

    fn from_facts(
        version: &str,
        cmdline: &str,
        containerenv: bool,
        dockerenv: bool,
        kubernetes: bool,
    ) -> Runtime {
        let lower = format!("{version} {cmdline}").to_ascii_lowercase();
        let kernel = if lower.contains("gvisor") || version.contains(GVISOR_DATE) {
            Some("gVisor")
        } else if version.contains("Microsoft") && !lower.contains("microsoft-standard") {
            // WSL 2 runs a real Linux kernel ("microsoft-standard-WSL2"); WSL 1 says
            // "Microsoft" alone.
            Some("WSL 1")
        } else {
            None
        };
        let container = if kubernetes {
            Some("Kubernetes")
        } else if containerenv {
            Some("podman")
        } else if dockerenv {
            Some("Docker")
        } else {
            None
        };
        Runtime { kernel, container }
    }

    /// Why the kernel's fences are missing here, when the runtime explains it: to put
    /// after "Landlock is not available" or "the kernel exec gate cannot run".
    pub fn limitation(&self) -> Option<String> {
        self.kernel.map(|k| {
            format!(
                "this runs under {k}, whose kernel implements neither Landlock nor seccomp user \
                 notification: run whalebox under runc or crun (or a VM-based runtime with a \
                 real Linux kernel) for these fences"
            )
        })
    }
}

/// `why`, followed by the runtime's limitation when there is one.
pub fn explain(why: &str) -> String {
    match Runtime::detect().limitation() {
        Some(l) => format!("{why} ({l})"),
        None => why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gvisor_by_name_or_by_its_date() {
        let new = "Linux version 4.19.0-gvisor #1 SMP Sun Jan 10 15:06:54 PST 2016";
        assert_eq!(
            Runtime::from_facts(new, "", false, false, true).kernel,
            Some("gVisor")
        );
        let old = "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016";
        assert_eq!(
            Runtime::from_facts(old, "", false, false, false).kernel,
            Some("gVisor")
        );
        let r = Runtime::from_facts(old, "", false, false, true);
        assert_eq!(r.container, Some("Kubernetes"));
        assert!(r.limitation().unwrap().contains("neither Landlock"));
    }

    #[test]
    fn real_kernels_are_not_flagged() {
        let debian = "Linux version 6.12.48+deb13-amd64 (debian-kernel@lists.debian.org)";
        let r = Runtime::from_facts(debian, "BOOT_IMAGE=/vmlinuz", true, false, false);
        assert_eq!(r.kernel, None);
        assert_eq!(r.container, Some("podman"));
        assert_eq!(r.limitation(), None);
        let wsl2 = "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@Microsoft.com)";
        assert_eq!(
            Runtime::from_facts(wsl2, "", false, false, false).kernel,
            None
        );
        let wsl1 = "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com)";
        assert_eq!(
            Runtime::from_facts(wsl1, "", false, false, false).kernel,
            Some("WSL 1")
        );
    }
}
