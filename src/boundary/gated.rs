//! Finding the gated zsh and the gate program, and checking that they are the real
//! ones (the zsh built with the gate, the gate next to whalebox).

use std::path::{Path, PathBuf};

/// The gated zsh and the gate, found and checked.
#[derive(Debug, Clone)]
pub struct GatedShell {
    pub zsh: PathBuf,
    pub gate: PathBuf,
}

/// Where the gate program is: `$WHALEBOX_GATE_BIN`, or `whalebox-gate` next to whalebox.
pub fn gate_program() -> Option<PathBuf> {
    std::env::var_os("WHALEBOX_GATE_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.join("whalebox-gate"))
        })
        .filter(|g| g.is_file())
}

/// Where the gated zsh may be, in order: the profile's `[shell] zsh`, else
/// `$WHALEBOX_ZSH`, `zsh` next to the whalebox binary, `../zsh/bin/zsh`, or
/// `target/zsh/bin/zsh` of the build whalebox runs from.
pub fn gated_shell_candidates(configured: Option<&str>) -> Vec<PathBuf> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(c) = configured {
        candidates.push(c.into());
    } else {
        if let Some(z) = std::env::var_os("WHALEBOX_ZSH") {
            candidates.push(z.into());
        }
        if let Some(d) = &exe_dir {
            candidates.push(d.join("zsh"));
            candidates.push(d.join("../zsh/bin/zsh"));
            candidates.push(d.join("../../target/zsh/bin/zsh"));
        }
    }
    candidates
}

/// Find the gated zsh among [`gated_shell_candidates`], and the gate
/// ([`gate_program`]). A candidate counts only if it really gates: run with no
/// server, an exec of the zsh itself must be denied. (The zsh, not a system program:
/// NixOS and Nix's build sandbox have no `/bin/true`, and a missing program exits 127
/// before any gate is asked.)
pub fn find_gated_shell(configured: Option<&str>) -> Result<GatedShell, String> {
    let gate = gate_program()
        .ok_or("whalebox-gate was not found next to the whalebox binary (or $WHALEBOX_GATE_BIN)")?;
    let candidates = gated_shell_candidates(configured);
    let mut tried = Vec::new();
    for zsh in candidates {
        if !zsh.is_file() {
            tried.push(format!("{} (missing)", zsh.display()));
            continue;
        }
        let probe = std::process::Command::new(&zsh)
            .args(["-fc", "\"$0\" -fc :"])
            .arg(&zsh)
            .env("WHALEBOX_GATE", &gate)
            .env("WHALEBOX_GATE_SOCKET", "/nonexistent/whalebox-probe.sock")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        match probe {
            Ok(st) if st.code() == Some(126) => {
                let zsh = zsh.canonicalize().unwrap_or(zsh);
                return Ok(GatedShell { zsh, gate });
            }
            _ => tried.push(format!("{} (not the gated zsh)", zsh.display())),
        }
    }
    Err(format!(
        "no gated zsh found (tried {}); build it with nix/zsh/build.sh or set [shell] zsh",
        if tried.is_empty() {
            "nothing".to_string()
        } else {
            tried.join(", ")
        }
    ))
}
