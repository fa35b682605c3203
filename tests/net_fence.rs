//! The network fence end to end (issue 24): real commands run by the real binary, their
//! connections through the session's proxy to HTTP servers on 127.0.0.1, names from the
//! profile's static host map (no test asks DNS), and every way around the proxy tried
//! against listeners on this machine's loopback, so a broken fence would be seen there
//! and no packet leaves the machine. Each test runs under every kernel fence this
//! machine has: its own network namespace per task, and the Landlock + seccomp
//! fallback; one it lacks is skipped, saying why.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Fixture, text};
use serde_json::{Value, json};

/// A plain HTTP/1.1 server on 127.0.0.1 that answers `hello from PATH` and remembers
/// every request head and how many connections it took.
struct Origin {
    port: u16,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (c, h) = (connections.clone(), heads.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { break };
                c.fetch_add(1, Ordering::SeqCst);
                let h = h.clone();
                std::thread::spawn(move || {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    h.lock().unwrap().push(head);
                    let body = format!("hello from {path}\n");
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        Origin {
            port,
            connections,
            heads,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The kernel fences to try: each with why it is skipped here, if it is.
fn kernels() -> Vec<&'static str> {
    let mut out = Vec::new();
    for kernel in ["namespace", "landlock"] {
        let f = Fixture::new().with_profile(&format!("[network]\nkernel = \"{kernel}\"\n"));
        let profile = f.profile.as_ref().unwrap().to_str().unwrap();
        let doctor = f
            .command(&["doctor", "--json", "--profile", profile])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&doctor.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor --json: {e}: {}\n{}",
                doctor.status,
                String::from_utf8_lossy(&doctor.stderr)
            )
        });
        let got = report["network"]["enforcement"]["kind"]
            .as_str()
            .unwrap_or("");
        if got == kernel {
            out.push(kernel);
        } else {
            eprintln!(
                "SKIPPED the `{kernel}` network fence here: {}",
                report["network"]["enforcement"]["why"]
            );
        }
    }
    out
}

fn profile(kernel: &str, network: &str) -> String {
    format!("[shell]\nexec_boundary = \"off\"\n[network]\nkernel = \"{kernel}\"\n{network}")
}

fn run(f: &Fixture, command: &str) -> Value {
    f.call("shell_run", &json!({"command": command}).to_string())
        .1
}

fn network(env: &Value) -> &Value {
    &env["data"]["network"]
}

#[test]
fn an_allowed_host_is_reached_through_the_proxy_and_an_unlisted_one_is_refused_naming_the_rule() {
    let origin = Origin::start();
    for kernel in kernels() {
        let f = Fixture::new().with_profile(&profile(
            kernel,
            "allow_domains = [\"files.test\"]\nallow_private = [\"127.0.0.1\"]\nports = []\n\
             [network.hosts]\n\"files.test\" = \"127.0.0.1\"\n\"other.test\" = \"127.0.0.1\"\n",
        ));
        let before = origin.connections();
        let env = run(
            &f,
            &format!(
                "curl -sS http://files.test:{0}/a; curl -sS http://other.test:{0}/b",
                origin.port
            ),
        );
        let t = text(&env);
        assert!(t.contains("hello from /a"), "{kernel}: {t}");
        assert!(!t.contains("hello from /b"), "{kernel}: {t}");
        assert!(
            t.contains("whalebox refused the connection to other.test")
                && t.contains("on_new_domain = \"ask\"")
                && t.contains("add \"other.test\" to [network] allow_domains"),
            "{kernel}: the refusal names the rule and the fix: {t}"
        );
        assert!(
            t.contains("Note: network: other.test:"),
            "{kernel}: the result says it: {t}"
        );
        let net = network(&env);
        assert_eq!(net["enforcement"], kernel, "{net:#}");
        assert_eq!(net["reached"][0]["host"], "files.test", "{net:#}");
        assert!(net["reached"][0]["bytes_down"].as_u64().unwrap() > 0);
        assert_eq!(net["refused"][0]["host"], "other.test", "{net:#}");
        assert_eq!(net["reached"][0]["by"], json!(["curl"]), "{net:#}");
        assert!(
            t.contains("other.test:") && t.contains("refused for curl"),
            "{t}"
        );
        assert_eq!(
            origin.connections() - before,
            1,
            "{kernel}: only /a arrived"
        );
        let heads = origin.heads.lock().unwrap();
        assert!(
            heads
                .last()
                .unwrap()
                .to_ascii_lowercase()
                .contains("host: files.test"),
            "{heads:?}"
        );
    }
}

#[test]
fn commands_that_ignore_the_proxy_reach_nothing_tcp_or_udp() {
    let origin = Origin::start();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let python = common::system_program("python3");
    for kernel in kernels() {
        let f = Fixture::new().with_profile(&profile(
            kernel,
            "allow_private = [\"127.0.0.1\"]\nports = []\non_new_domain = \"allow\"\n",
        ));
        f.write(
            "bypass.py",
            format!(
                "import socket\n\
                 def tcp():\n    s = socket.create_connection(('127.0.0.1', {tcp}), timeout=3); s.sendall(b'GET /direct HTTP/1.0\\r\\n\\r\\n'); return s.recv(100)\n\
                 def udp():\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'leak', ('127.0.0.1', {udp})); return 'sent'\n\
                 def udp6():\n    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.sendto(b'leak', ('::ffff:127.0.0.1', {udp})); return 'sent'\n\
                 def raw():\n    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP).sendto(b'leak', ('127.0.0.1', {udp})); return 'sent'\n\
                 for name, f in [('tcp', tcp), ('udp', udp), ('udp6', udp6), ('raw', raw)]:\n\
                 \x20   try:\n        print(name, 'ok', f())\n\
                 \x20   except OSError as e:\n        print(name, 'failed', e.errno)\n",
                tcp = origin.port,
                udp = udp_port,
            ),
        );
        let before = origin.connections();
        let env = run(
            &f,
            &format!(
                "curl -sS --noproxy '*' --max-time 3 http://127.0.0.1:{}/direct; {} bypass.py",
                origin.port,
                python.display()
            ),
        );
        let t = text(&env);
        assert!(!t.contains("hello from /direct"), "{kernel}: {t}");
        assert!(t.contains("tcp failed"), "{kernel}: {t}");
        if kernel == "landlock" {
            // Refused by the socket filter before anything is sent.
            for name in ["udp", "udp6", "raw"] {
                assert!(t.contains(&format!("{name} failed 13")), "{kernel}: {t}");
            }
        }
        assert_eq!(
            origin.connections(),
            before,
            "{kernel}: a direct TCP connection arrived: {t}"
        );
        let mut buf = [0u8; 16];
        assert!(
            udp.recv_from(&mut buf).is_err(),
            "{kernel}: a UDP datagram arrived: {t}"
        );
    }
}

#[test]
fn names_and_addresses_of_this_machine_are_refused_unless_allow_private_names_them() {
    let origin = Origin::start();
    for kernel in kernels() {
        let f = Fixture::new().with_profile(&profile(
            kernel,
            "ports = []\non_new_domain = \"allow\"\n[network.hosts]\n\"rebind.test\" = \"127.0.0.1\"\n\
             \"mapped.test\" = \"::ffff:127.0.0.1\"\n\"both.test\" = [\"93.184.215.14\", \"10.1.2.3\"]\n",
        ));
        let before = origin.connections();
        let env = run(
            &f,
            &format!(
                "for h in rebind.test mapped.test both.test 127.0.0.1 '[::ffff:7f00:1]' 2130706433; do \
                 curl -sS -x \"$HTTP_PROXY\" http://$h:{}/x; echo; done",
                origin.port
            ),
        );
        let t = text(&env);
        assert!(!t.contains("hello from"), "{kernel}: {t}");
        assert!(
            t.contains("rebind.test resolves to 127.0.0.1, a loopback address"),
            "{t}"
        );
        assert!(t.contains("mapped.test resolves to 127.0.0.1"), "{t}");
        assert!(
            t.contains("both.test resolves to 10.1.2.3, a private (10.0.0.0/8) address"),
            "{t}"
        );
        assert!(t.contains("add \"127.0.0.1\" to allow_private"), "{t}");
        assert_eq!(origin.connections(), before, "{kernel}");
    }
}

#[test]
fn ports_outside_the_list_and_denied_domains_are_refused() {
    let origin = Origin::start();
    for kernel in kernels() {
        let f = Fixture::new().with_profile(&profile(
            kernel,
            "allow_domains = [\"*.test\"]\ndeny_domains = [\"bad.test\"]\nallow_private = [\"127.0.0.1\"]\n\
             [network.hosts]\n\"good.test\" = \"127.0.0.1\"\n\"bad.test\" = \"127.0.0.1\"\n",
        ));
        let env = run(
            &f,
            &format!(
                "curl -sS http://good.test:{0}/x; echo; curl -sS http://bad.test:80/y; echo; \
                 curl -sS -p http://good.test:{0}/z",
                origin.port
            ),
        );
        let t = text(&env);
        assert!(!t.contains("hello from"), "{kernel}: {t}");
        assert!(
            t.contains(&format!(
                "port {} is not in the allowed ports [80, 443]",
                origin.port
            )),
            "{kernel}: {t}"
        );
        assert!(
            t.contains("bad.test is in deny_domains (`bad.test`)"),
            "{t}"
        );
        let refused = network(&env)["refused"].as_array().unwrap().len();
        assert_eq!(refused, 2, "{:#}", network(&env));
    }
}

#[test]
fn a_tasks_own_loopback_works_inside_its_namespace() {
    if !kernels().contains(&"namespace") {
        return;
    }
    let f = Fixture::new().with_profile(&profile("namespace", ""));
    let python = common::system_program("python3");
    let env = run(
        &f,
        &format!(
            "{} -m http.server 18777 --bind 127.0.0.1 >/dev/null 2>&1 & \
             for i in 1 2 3 4 5 6 7 8 9 10; do curl -s -o /dev/null -w '%{{http_code}}\\n' http://localhost:18777/ && break; sleep 0.3; done; kill %1",
            python.display()
        ),
    );
    assert!(text(&env).contains("200"), "{}", text(&env));
}

#[test]
fn mode_off_leaves_commands_on_the_network_and_enforce_refuses_without_a_fence() {
    let f = Fixture::new()
        .with_profile("[shell]\nexec_boundary = \"off\"\n[network]\nmode = \"off\"\n");
    let env = run(&f, "echo ${HTTP_PROXY:-none}");
    assert!(text(&env).starts_with("none\n"), "{}", text(&env));
    assert!(env["data"].get("network").is_none(), "{env:#}");

    // Landlock off and namespaces refused: nothing is left to enforce with, which the
    // profile says by itself, so it is refused when it loads.
    let f = Fixture::new().with_profile(
        "[shell]\nexec_boundary = \"off\"\n[landlock]\nmode = \"off\"\n[network]\nmode = \"enforce\"\nkernel = \"landlock\"\n",
    );
    let out = f
        .command(&[
            "call",
            "shell_run",
            "--args",
            r#"{"command": "echo hi"}"#,
            "--profile",
            f.profile.as_ref().unwrap().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 2);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("[network] mode = \"enforce\""), "{said}");
}

#[test]
fn every_connection_is_one_audit_record() {
    let origin = Origin::start();
    let kernel = match kernels().first() {
        Some(k) => *k,
        None => return,
    };
    let f = Fixture::new();
    let log = f.root.join("audit.jsonl");
    let f = f.with_profile(&format!(
        "[shell]\nexec_boundary = \"off\"\naudit_log = \"{}\"\n[network]\nkernel = \"{kernel}\"\n\
         allow_domains = [\"files.test\"]\nallow_private = [\"127.0.0.1\"]\nports = []\n\
         [network.hosts]\n\"files.test\" = \"127.0.0.1\"\n",
        log.display()
    ));
    let env = run(
        &f,
        &format!(
            "curl -sS http://files.test:{0}/a; curl -sS http://nope.test:{0}/b",
            origin.port
        ),
    );
    let task = env["data"]["task_id"].as_str().unwrap().to_string();
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["kind"] == "network")
        .collect();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(records[0]["decision"], "allow");
    assert_eq!(records[0]["host"], "files.test");
    assert_eq!(records[0]["address"], "127.0.0.1");
    assert_eq!(records[0]["task"], task.as_str());
    assert!(records[0]["bytes_down"].as_u64().unwrap() > 0);
    assert!(records[0]["command"].as_str().unwrap().contains("curl"));
    // The program behind it, found while it was connected: the task's shell ran curl.
    let programs = records[0]["programs"].as_array().expect("programs named");
    assert_eq!(programs.last().unwrap(), "curl", "{records:#?}");
    assert_eq!(records[1]["decision"], "deny");
    assert!(records[1]["rule"].as_str().unwrap().contains("nope.test"));
}

#[test]
fn whalebox_run_goes_through_the_fence_and_says_what_it_refused() {
    let origin = Origin::start();
    for kernel in kernels() {
        let f = Fixture::new().with_profile(&profile(
            kernel,
            "allow_domains = [\"files.test\"]\nallow_private = [\"127.0.0.1\"]\nports = []\n\
             [network.hosts]\n\"files.test\" = \"127.0.0.1\"\n",
        ));
        let profile = f.profile.clone().unwrap();
        let out = f
            .command(&[
                "run",
                "--profile",
                profile.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &format!(
                    "curl -sS http://files.test:{0}/ok; curl -sS http://elsewhere.test:{0}/no",
                    origin.port
                ),
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains("hello from /ok"),
            "{kernel}: {stdout}{stderr}"
        );
        assert!(
            stderr.contains("whalebox: network: elsewhere.test:"),
            "{kernel}: {stderr}"
        );
    }
}

#[test]
fn doctor_says_how_the_network_is_fenced_and_what_stays_open() {
    let f = Fixture::new();
    let out = f.command(&["doctor"]).output().unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    let line = t
        .lines()
        .find(|l| l.starts_with("network:"))
        .unwrap_or_else(|| panic!("no network line: {t}"));
    assert!(
        line.contains("network namespace")
            || line.contains("Landlock")
            || line.contains("only the proxy variables"),
        "{line}"
    );
    assert!(t.contains("still open:"), "{t}");
    assert!(t.contains("unlisted hosts: ask"), "{t}");
}

#[test]
fn a_repositorys_policy_file_says_which_hosts_its_commands_may_reach() {
    let origin = Origin::start();
    let kernel = match kernels().first() {
        Some(k) => *k,
        None => return,
    };
    let f = Fixture::new();
    f.write(
        "policy.toml",
        "version = 1\ndefault = \"allow\"\n\
         [[network]]\nhosts = [\"ci.test\"]\ndecision = \"allow\"\njustification = \"our CI cache\"\n\
         match = [\"ci.test\"]\nnot_match = [\"ci.test.evil.example\"]\n\
         [[network]]\nhosts = [\"*.blocked.test\"]\ndecision = \"deny\"\njustification = \"never\"\n\
         match = [\"x.blocked.test\"]\n",
    );
    let policy = f.ws.join("policy.toml");
    let f = f.with_profile(&format!(
        "policy = \"{}\"\n[shell]\nexec_boundary = \"off\"\n[network]\nkernel = \"{kernel}\"\n\
         allow_domains = [\"*.test\"]\nallow_private = [\"127.0.0.1\"]\nports = []\non_new_domain = \"deny\"\n\
         [network.hosts]\n\"ci.test\" = \"127.0.0.1\"\n\"x.blocked.test\" = \"127.0.0.1\"\n",
        policy.display()
    ));
    let env = run(
        &f,
        &format!(
            "curl -sS http://ci.test:{0}/ok; curl -sS http://x.blocked.test:{0}/no",
            origin.port
        ),
    );
    let t = text(&env);
    assert!(t.contains("hello from /ok"), "{t}");
    assert!(!t.contains("hello from /no"), "{t}");
    assert!(
        t.contains("x.blocked.test:")
            && t.contains("is refused by the policy rule")
            && t.contains("policy.toml:10 (deny: never)"),
        "the refusal names the rule's file and line: {t}"
    );

    // A rule whose example does not hold stops the policy from loading.
    f.write(
        "policy.toml",
        "version = 1\n[[network]]\nhosts = [\"github.com\"]\ndecision = \"allow\"\nmatch = [\"api.github.com\"]\n",
    );
    let out = f
        .command(&["policy", "test", policy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("does not match its example")
            || String::from_utf8_lossy(&out.stderr).contains("does not match its example"),
        "{out:?}"
    );
}

/// Without root, the session's namespace is made inside a user namespace (by its holder,
/// outside the server's Landlock layer), which each task's supervisor joins: run the
/// whole thing as `nobody` (needs root to switch, and setpriv).
#[test]
fn an_unprivileged_user_gets_its_own_network_namespace_too() {
    // SAFETY: geteuid cannot fail.
    if unsafe { nix::libc::geteuid() } != 0 || common::find_system_program("setpriv").is_none() {
        eprintln!("SKIPPED: needs root (to become nobody) and setpriv");
        return;
    }
    let origin = Origin::start();
    let f = Fixture::new().with_profile(
        "[network]\nkernel = \"namespace\"\nallow_domains = [\"files.test\"]\nallow_private = [\"127.0.0.1\"]\n\
         ports = []\n[network.hosts]\n\"files.test\" = \"127.0.0.1\"\n"
    );
    // The binary and the fixture where nobody can reach them.
    let bin = f.root.join("whalebox");
    std::fs::copy(common::bin(), &bin).unwrap();
    let nobody = "65534";
    let chown = std::process::Command::new("chown")
        .args([
            "-R",
            &format!("{nobody}:{nobody}"),
            f.root.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(chown.success());
    let probe = std::process::Command::new("setpriv")
        .args(["--reuid", nobody, "--regid", nobody, "--clear-groups"])
        .arg(&bin)
        .arg("__netns-probe")
        .output()
        .unwrap();
    if String::from_utf8_lossy(&probe.stdout).trim() != "user" {
        eprintln!(
            "SKIPPED: unprivileged user namespaces are off here: {}",
            String::from_utf8_lossy(&probe.stdout)
        );
        return;
    }
    let args = json!({"command": format!(
        "id -u; curl -sS http://files.test:{0}/ns; curl -sS --noproxy '*' http://127.0.0.1:{0}/direct",
        origin.port
    )})
    .to_string();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid", nobody, "--regid", nobody, "--clear-groups"])
        .arg(&bin)
        .args(["call", "shell_run", "--args", &args, "--profile"])
        .arg(f.profile.as_ref().unwrap())
        .arg("--workspace")
        .arg(&f.ws)
        .env("HOME", &f.home)
        .current_dir(&f.ws)
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let t = text(&env);
    assert!(t.starts_with("65534\n"), "{t}");
    assert!(t.contains("hello from /ns"), "{t}");
    assert!(!t.contains("hello from /direct"), "{t}");
    assert_eq!(
        network(&env)["enforcement"],
        "namespace",
        "{:#}",
        network(&env)
    );
}

/// A machine whose `/proc` has a path covered (a container's masked `/proc/kmsg`) lets
/// no unprivileged user mount a procfs again, so a session gets no PID namespace; it
/// must still get its own network and IPC namespaces (a session slot makes those for
/// each session whatever became of its PID namespace), not fall back to the Landlock
/// fence and the machine's System V objects. As root only (it masks /proc in a mount
/// namespace of its own, then runs whalebox as nobody).
#[test]
fn without_a_pid_namespace_a_session_still_gets_its_network_namespace() {
    // SAFETY: getuid cannot fail.
    if unsafe { nix::libc::getuid() } != 0 {
        eprintln!("SKIPPED: masking /proc in a mount namespace needs root");
        return;
    }
    let (Some(unshare), Some(setpriv)) = (
        common::find_system_program("unshare"),
        common::find_system_program("setpriv"),
    ) else {
        eprintln!("SKIPPED: needs unshare and setpriv (util-linux)");
        return;
    };
    let top = tempfile::tempdir().unwrap();
    let (ws, home) = (top.path().join("ws"), top.path().join("home"));
    for dir in [top.path(), &ws, &home] {
        std::fs::create_dir_all(dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let call = |mask: bool| -> Value {
        let script = format!(
            "{}exec {} --reuid=65534 --regid=65534 --clear-groups env HOME={} {} call shell_run \
             --workspace {} --args '{{\"command\": \"ls /proc | grep -c \\\"^[0-9]\\\"; ipcs -m\"}}'",
            if mask {
                "mount --bind /dev/null /proc/kmsg && "
            } else {
                ""
            },
            setpriv.display(),
            home.display(),
            common::bin(),
            ws.display(),
        );
        let mut cmd = std::process::Command::new(&unshare);
        cmd.args(["-m", "--propagation", "private", "sh", "-c", &script]);
        common::isolate(&mut cmd, &home);
        let out = cmd.output().unwrap();
        common::envelope(&out)
    };
    let plain = call(false);
    if plain["data"]["network"]["enforcement"] != "namespace" || !common::pid_namespaces() {
        eprintln!(
            "SKIPPED: no session namespaces here for nobody: {}",
            text(&plain)
        );
        return;
    }
    let masked = call(true);
    assert_eq!(
        masked["data"]["network"]["enforcement"],
        "namespace",
        "{}",
        text(&masked)
    );
    // The probe is sound: with /proc masked, no PID namespace (the machine's processes
    // are listed), where without the mask there is one (the session's few).
    let listed = |env: &Value| -> usize {
        text(env)
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0)
    };
    assert!(listed(&plain) < 10, "{}", text(&plain));
    assert!(listed(&masked) >= 10, "{}", text(&masked));
}
