//! `whalebox doctor`: what this machine and profile give each fence.

use std::process::ExitCode;

use serde_json::json;
use whalebox::tools::Session;

use crate::ProfileArgs;
use crate::setup::{presets_line, setup};

pub(crate) fn doctor(as_json: bool, args: &ProfileArgs) -> ExitCode {
    let (_registry, env) = match setup(args, Session::OneShot) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let landlock = env.sandbox_status();
    let server = env
        .sandbox
        .as_ref()
        .map(|s| s.status(whalebox::guard::landlock::Layer::Server));
    let zsh = if env.policy.is_some() {
        match env.gated_shell() {
            Ok(g) => json!({"found": true, "zsh": g.zsh, "gate": g.gate}),
            Err(why) => json!({"found": false, "why": why}),
        }
    } else {
        json!({"found": false, "why": "the exec boundary is off (or the shell group is)"})
    };
    let kernel_gate = match env.kernel_gate() {
        Ok(method) => json!({"works": true, "method": method.name()}),
        Err(why) => json!({"works": false, "why": why}),
    };
    let net = &env.profile.network;
    let fence = env.network();
    let network = match &fence {
        Ok(Some(f)) => json!({
            "mode": net.mode,
            "enforcement": f.enforcement(),
            "summary": f.enforcement().describe(),
            "still_open": f.enforcement().still_open(),
            "allow_domains": net.allow_domains,
            "deny_domains": net.deny_domains,
            "on_new_domain": net.on_new_domain,
            "ports": net.ports,
        }),
        Ok(None) => json!({"mode": net.mode}),
        Err(why) => json!({"mode": net.mode, "error": why}),
    };
    // Read, never made: the doctor writes nothing.
    let kept = |dir: &std::path::Path| {
        std::fs::read_dir(dir.join("records"))
            .map(|l| {
                l.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .count()
            })
            .unwrap_or(0)
    };
    let checkpoints = match &env.checkpoints {
        None => json!({"on": false}),
        Some(c) => json!({
            "on": true,
            "store": c.dir(),
            "changes_found_by": whalebox::checkpoint::server_method(&env.profile),
            "checkpoints": kept(c.dir()),
            "exclude": env.profile.checkpoints.exclude,
        }),
    };
    let runtime = whalebox::guard::runtime::Runtime::detect();
    let (limits, limit_lines) = limits_report(&env);
    // What a session's tasks see of the machine's processes (a probe, as for the
    // network namespace: doctor starts no session).
    let processes = whalebox::net::netns::probe_processes();
    let report = json!({
        "runtime": {
            "kernel": runtime.kernel.unwrap_or("Linux"),
            "container": runtime.container,
            "limitation": runtime.limitation(),
        },
        "checkpoints": checkpoints,
        "network": network,
        "profile": env.profile.source_name(),
        "workspace": env.guard.workspace(),
        "landlock": landlock,
        "landlock_server": server,
        "private_tmp": env.private.tmp,
        "exec_boundary": env.profile.shell.exec_boundary,
        "gated_zsh": zsh,
        "kernel_exec_gate": kernel_gate,
        "policy": env.profile.policy.as_ref().map(|p| p.display().to_string())
            .unwrap_or_else(|| "embedded default".into()),
        "presets": env.profile.landlock.presets,
        "git": env.profile.git,
        "git_guard": env.git_guard.as_ref().map(|_| json!({
            "quarantine": whalebox::session::git_quarantine_dir(&env.profile),
        })),
        "presets_auto": env.profile.landlock.presets_auto.as_ref().map(|found| {
            found.iter().map(|(p, marker)| json!({"preset": p, "marker": marker})).collect::<Vec<_>>()
        }),
        "preset_paths": env.profile.landlock.preset_paths,
        "limits": limits,
        "task_machine": machine_report(env.profile.shell.user_namespaces),
        "task_processes": match &processes {
            Ok(()) => json!({"pid_namespace": true}),
            Err(why) => json!({"pid_namespace": false, "why": why}),
        },
    });
    if as_json {
        println!("{report:#}");
        return ExitCode::SUCCESS;
    }
    println!("profile:    {}", env.profile.source_name());
    println!("workspace:  {}", env.guard.workspace().display());
    println!(
        "runtime:    {}{}",
        runtime.kernel.unwrap_or("Linux"),
        runtime
            .container
            .map(|c| format!(", in a {c} container"))
            .unwrap_or_default()
    );
    if let Some(limitation) = runtime.limitation() {
        println!("            {limitation}");
    }
    println!("landlock:   {}", landlock.summary());
    if landlock.kernel_abi == 0 {
        println!(
            "            what to do: use Linux 5.13 or newer with Landlock enabled (lsm=...,landlock), \
             or in a container allow the landlock_* syscalls in its seccomp profile"
        );
    }
    println!("tmpdir:     {} (private, 0700)", env.private.tmp.display());
    match &env.checkpoints {
        None => println!("checkpoints: off"),
        Some(c) => println!(
            "checkpoints: {} in {} (private, 0700, reached by the server only); changes found by {}",
            kept(c.dir()),
            c.dir().display(),
            whalebox::checkpoint::server_method(&env.profile)
        ),
    }
    if let Some(linked) = &env.profile.git.linked {
        let root = linked.read_root().display();
        match env.profile.git.main_worktree {
            whalebox::profile::MainWorktree::Read => println!(
                "git:        a linked worktree of {root}: read-only; git may write {} \
                 ([git] main_worktree = \"read\"); trusted because {}",
                linked
                    .commit_paths()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                linked.evidence
            ),
            whalebox::profile::MainWorktree::Off => println!(
                "git:        a linked worktree of {root}, closed ([git] main_worktree = \"off\"): \
                 git fails here"
            ),
        }
    }
    if let Some(why) = &env.profile.git.refused {
        println!("git:        no worktree root derived (the `.git` file is not verified): {why}");
    }
    match &env.git_guard {
        Some(_) => {
            let kept = env.profile.git.allow_exec_config.keys();
            println!(
                "git guard:  git configuration that runs programs and hooks commands leave are undone{}; \
                 hooks go to {}",
                if kept.is_empty() {
                    String::new()
                } else {
                    format!(" (kept: {})", kept.join(", "))
                },
                whalebox::session::git_quarantine_dir(&env.profile).display()
            );
        }
        None if env.profile.git.allow_exec_config.all() => println!(
            "git guard:  off ([git] allow_exec_config = true): commands may leave git configuration \
             and hooks that the person's git runs outside the sandbox"
        ),
        None => {}
    }
    let l = &env.profile.landlock;
    println!("presets:    {}", presets_line(l));
    if !l.presets.is_empty() {
        for p in &l.preset_paths {
            println!(
                "            {:<6} {:<16} {} ({}{})",
                p.preset.name(),
                p.access,
                p.path.display(),
                p.what,
                if p.exists {
                    ""
                } else {
                    "; created when the sandbox is entered"
                }
            );
        }
    }
    println!(
        "machine:    a task keeps the capabilities {} (root; none otherwise) and may not call {}; nor {}",
        machine::KEPT
            .iter()
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        machine::DENIED
            .iter()
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        machine::DENIED_WITH_ARGUMENTS.join("; ")
    );
    if env.profile.shell.user_namespaces.allowed() {
        println!(
            "            user namespaces: a task may make them ([shell] user_namespaces = \"allow\")"
        );
    } else {
        println!(
            "            user namespaces: refused ([shell] user_namespaces = \"deny\"): {}",
            machine::DENIED_USER_NAMESPACES.join("; ")
        );
    }
    match &processes {
        Ok(()) => println!(
            "processes:  a session's tasks share a PID namespace with a /proc of its own: they \
             list and reach only the session's processes"
        ),
        Err(why) => println!(
            "processes:  tasks see the machine's processes and their command lines in /proc (no \
             PID namespace of the session's: {why})"
        ),
    }
    match env.gated_shell() {
        Ok(g) if env.policy.is_some() => println!(
            "gated zsh:  {} (exec_boundary = {})",
            g.zsh.display(),
            json!(env.profile.shell.exec_boundary)
        ),
        Ok(_) => println!("gated zsh:  not used (exec boundary off)"),
        Err(why) => println!("gated zsh:  not found: {why}"),
    }
    match env.kernel_gate() {
        Ok(method) => println!(
            "exec gate:  kernel ({}): every exec of every process of a task is decided{}",
            match method {
                whalebox::boundary::kernel::Method::Notify =>
                    "seccomp user notification, ptrace at each exec to verify it",
                whalebox::boundary::kernel::Method::Ptrace =>
                    "seccomp + ptrace, every process of a task traced",
            },
            if env.policy.is_some() {
                ""
            } else {
                " (not used: the exec boundary is off)"
            }
        ),
        Err(why) => {
            println!("exec gate:  the kernel gate cannot run here: {why}");
            println!(
                "            what it means: only the gated zsh's own execs are decided; \
                 exec_boundary = \"required\" refuses to run commands"
            );
            println!(
                "            what to do: allow ptrace and seccomp for whalebox (a container's \
                 seccomp profile, Yama ptrace_scope < 3), on x86_64"
            );
        }
    }
    for (i, line) in limit_lines.iter().enumerate() {
        println!(
            "{}{line}",
            if i == 0 {
                "limits:     "
            } else {
                "            "
            }
        );
    }
    match &fence {
        Ok(Some(f)) => {
            println!("network:    {}", f.enforcement().describe());
            for open in f.enforcement().still_open() {
                println!("            still open: {open}");
            }
            println!(
                "            allowed: {}; unlisted hosts: {} ([network] on_new_domain); ports: {}",
                if net.allow_domains.is_empty() {
                    "no host".to_string()
                } else {
                    net.allow_domains.join(", ")
                },
                json!(net.on_new_domain).as_str().unwrap_or_default(),
                if net.ports.is_empty() {
                    "any".to_string()
                } else {
                    format!("{:?}", net.ports)
                }
            );
        }
        Ok(None) => println!(
            "network:    off ([network] mode = \"off\"): commands reach the network directly"
        ),
        Err(why) => println!("network:    {why}; commands will not run"),
    }
    ExitCode::SUCCESS
}

/// A limit's value as shown, what keeps it, and a note on what that means.
type Kept = (String, String, Option<String>);

/// What keeps each of `[shell.limits]` for a task here: `limits` in the JSON report and
/// the lines for people (the first one a summary).
fn limits_report(env: &whalebox::session::Env) -> (serde_json::Value, Vec<String>) {
    use whalebox::guard::limits::cgroup::{Controller, Version};
    use whalebox::guard::limits::human_bytes;
    let l = env.profile.shell.task_limits;
    let cgroups = env.task_cgroups();
    let by_cgroup = |found: Option<&Result<Controller, String>>, file: &str| match found {
        Some(Ok(c)) => Ok(format!(
            "cgroup {} {file}",
            match c.version {
                Version::V1 => "v1",
                Version::V2 => "v2",
            }
        )),
        Some(Err(why)) => Err(why.clone()),
        None => Err(
            if env.profile.shell.limits.cgroup == whalebox::guard::limits::CgroupMode::Off {
                "[shell.limits] cgroup = \"off\"".to_string()
            } else {
                "no cgroup is made (the shell group is off)".to_string()
            },
        ),
    };
    // SAFETY: geteuid cannot fail.
    let root = unsafe { nix::libc::geteuid() } == 0;
    let processes = l.processes.map(|n| {
        match by_cgroup(cgroups.map(|c| &c.pids), "pids.max") {
            Ok(how) => (n.to_string(), how, None),
            Err(why) => (
                n.to_string(),
                "RLIMIT_NPROC".to_string(),
                Some(if root {
                    format!("no cgroup ({why}); root is not held by RLIMIT_NPROC, so a fork bomb is not stopped")
                } else {
                    format!("no cgroup ({why}); the kernel counts all of the user's processes")
                }),
            ),
        }
    });
    let memory = l.memory.map(
        |n| match by_cgroup(cgroups.map(|c| &c.memory), "memory limit") {
            Ok(how) => (human_bytes(n), how, None),
            Err(why) => (
                human_bytes(n),
                "not enforced".to_string(),
                Some(format!(
                    "no cgroup ({why}); [shell.limits] address_space (RLIMIT_AS) is the fallback"
                )),
            ),
        },
    );
    let plain = |v: Option<String>, how: &str| v.map(|v| (v, how.to_string(), None));
    let rows: Vec<(&str, Option<Kept>)> = vec![
        ("processes", processes),
        ("memory", memory),
        (
            "open_files",
            plain(l.open_files.map(|n| n.to_string()), "RLIMIT_NOFILE"),
        ),
        (
            "cpu_seconds",
            plain(l.cpu_seconds.map(|n| format!("{n} s")), "RLIMIT_CPU"),
        ),
        (
            "address_space",
            plain(l.address_space.map(human_bytes), "RLIMIT_AS"),
        ),
    ];
    let mut data = serde_json::Map::new();
    let mut summary = Vec::new();
    let mut notes = Vec::new();
    for (key, row) in rows {
        match row {
            None => {
                data.insert(key.into(), json!({"value": null, "enforced_by": null}));
                summary.push(format!("{key} off"));
            }
            Some((value, how, note)) => {
                data.insert(
                    key.into(),
                    json!({"value": value, "enforced_by": how, "note": note}),
                );
                summary.push(format!("{key} {value} ({how})"));
                if let Some(note) = note {
                    notes.push(format!("{key}: {note}"));
                }
            }
        }
    }
    let mut lines = vec![format!("per task: {}", summary.join(", "))];
    lines.extend(notes);
    if let Some(c) = cgroups {
        let dirs: Vec<String> = c.dirs().iter().map(|d| d.display().to_string()).collect();
        if !dirs.is_empty() {
            lines.push(format!("tasks' cgroups under {}", dirs.join(" and ")));
        }
        data.insert("cgroup_dirs".into(), json!(dirs));
    }
    (serde_json::Value::Object(data), lines)
}

use whalebox::guard::machine;

/// What every task's supervisor takes away before the task runs (`guard::machine`).
fn machine_report(user_namespaces: whalebox::profile::UserNamespaces) -> serde_json::Value {
    json!({
        "capabilities_kept": machine::KEPT.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        "denied_calls": machine::DENIED.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        "denied_with_arguments": machine::DENIED_WITH_ARGUMENTS,
        "user_namespaces": user_namespaces,
        "denied_user_namespaces": if user_namespaces.allowed() {
            &[][..]
        } else {
            machine::DENIED_USER_NAMESPACES
        },
    })
}
