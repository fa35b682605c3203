use super::*;

fn settings() -> FenceSettings {
    FenceSettings {
        on_ask: OnAsk::Deny,
        approver: ApproverSlot::default(),
        ask_timeout: Duration::from_secs(1),
        audit_log: None,
        run_dir: std::env::temp_dir(),
        policy_rules: Vec::new(),
        approvals_file: None,
    }
}

fn fence(enforcement: Enforcement) -> NetworkFence {
    NetworkFence::new(&NetworkSection::default(), settings(), enforcement, None)
        .unwrap()
        .unwrap()
}

#[test]
fn a_failed_lookup_under_a_kernel_fence_is_explained_and_not_without_one() {
    let tail = "ssh: Could not resolve hostname github.com: Temporary failure in name resolution\n";
    let fenced = fence(Enforcement::Namespace {
        user_namespace: false,
    });
    let line = fenced.explain_direct(tail).unwrap();
    assert!(
        line.contains("(namespace)") && line.contains("HTTP_PROXY"),
        "{line}"
    );
    assert!(fenced.explain_direct("all good\n").is_none());
    let open = fence(Enforcement::VariablesOnly { why: "x".into() });
    assert!(open.explain_direct(tail).is_none());
}

#[test]
fn enforce_without_a_kernel_fence_is_refused_and_off_is_no_fence() {
    let section = NetworkSection {
        mode: FenceMode::Enforce,
        ..NetworkSection::default()
    };
    let err = NetworkFence::new(
        &section,
        settings(),
        Enforcement::VariablesOnly { why: "no".into() },
        None,
    )
    .unwrap_err();
    assert!(err.contains("mode = \"enforce\""), "{err}");
    let off = NetworkSection {
        mode: FenceMode::Off,
        ..NetworkSection::default()
    };
    assert!(
        NetworkFence::new(&off, settings(), Enforcement::Landlock { abi: 4 }, None)
            .unwrap()
            .is_none()
    );
}
