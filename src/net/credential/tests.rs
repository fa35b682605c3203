use super::*;

fn creds() -> Credentials {
    Credentials::new(vec![
        Credential {
            name: "github".into(),
            env: "GITHUB_TOKEN".into(),
            hosts: vec!["api.github.com".into(), "*.githubusercontent.com".into()],
            sending: Sending::default(),
            secret: "ghp_SECRET".into(),
            plain_http: false,
        },
        Credential {
            name: "git".into(),
            env: "GIT_TOKEN".into(),
            hosts: vec!["git.example".into()],
            sending: Sending::Basic {
                user: "x-access-token".into(),
            },
            secret: "s3cret".into(),
            plain_http: false,
        },
    ])
    .unwrap()
}

#[test]
fn placeholders_are_unique_and_hide_the_secret() {
    let a = creds();
    let b = creds();
    let env = a.task_env();
    assert_eq!(env[0].0, "GITHUB_TOKEN");
    assert!(env[0].1.starts_with("whalebox-placeholder-github-"));
    assert_eq!(env[0].1.len(), "whalebox-placeholder-github-".len() + 32);
    assert_ne!(env[0].1, b.task_env()[0].1);
    assert!(!format!("{a:?}").contains("SECRET"));
    assert!(a.covers("api.github.com"));
    assert!(a.covers("raw.githubusercontent.com"));
    assert!(!a.covers("github.com"));
}

#[test]
fn swaps_token_basic_and_bare_forms() {
    let c = creds();
    let env = c.task_env();
    let (gh, git) = (&env[0].1, &env[1].1);
    let v = format!("Bearer {gh}");
    let (out, used) = c
        .swap_value("api.github.com", "Authorization", v.as_bytes())
        .unwrap();
    assert_eq!(out, b"Bearer ghp_SECRET");
    assert_eq!(used, vec!["github".to_string()]);
    let (out, _) = c
        .swap_value("api.github.com", "Authorization", gh.as_bytes())
        .unwrap();
    assert_eq!(out, b"Bearer ghp_SECRET");
    let v = format!("Basic {}", B64.encode(format!("me:{git}")));
    let (out, _) = c
        .swap_value("git.example", "authorization", v.as_bytes())
        .unwrap();
    assert_eq!(out, format!("Basic {}", B64.encode("me:s3cret")).as_bytes());
    let (out, _) = c
        .swap_value("git.example", "Authorization", git.as_bytes())
        .unwrap();
    assert_eq!(
        out,
        format!("Basic {}", B64.encode("x-access-token:s3cret")).as_bytes()
    );
    // Not to another host, and not another credential's placeholder.
    assert!(
        c.swap_value("evil.test", "Authorization", v.as_bytes())
            .is_none()
    );
    assert!(
        c.swap_value("api.github.com", "Authorization", v.as_bytes())
            .is_none()
    );
    assert_eq!(
        c.mask_value("api.github.com", b"echo: Bearer ghp_SECRET")
            .unwrap(),
        format!("echo: Bearer {gh}").as_bytes()
    );
}

#[test]
fn leaks_are_found_in_plain_and_basic_forms() {
    let c = creds();
    let gh = c.task_env()[0].1.clone();
    assert!(c.leak("api.github.com", 443, gh.as_bytes()).is_none());
    let l = c
        .leak("evil.test", 80, format!("q={gh}").as_bytes())
        .unwrap();
    assert_eq!(l.credential, "github");
    assert!(l.rule.contains("evil.test:80"), "{}", l.rule);
    assert!(l.rule.contains("GITHUB_TOKEN"), "{}", l.rule);
    assert!(!l.rule.contains("SECRET") && !l.how_to_allow.contains("SECRET"));
    let basic = format!("Basic {}", B64.encode(format!("u:{gh}")));
    assert!(c.leak("evil.test", 80, basic.as_bytes()).is_some());
    assert!(c.leak("git.example", 443, basic.as_bytes()).is_some());
}

#[test]
fn bad_credentials_are_refused_without_showing_the_secret() {
    let mk = |name: &str, env: &str, secret: &str| {
        Credentials::new(vec![Credential {
            name: name.into(),
            env: env.into(),
            hosts: vec!["a.test".into()],
            sending: Sending::default(),
            secret: secret.into(),
            plain_http: false,
        }])
    };
    assert!(mk("a b", "A", "x").is_err());
    assert!(mk("a", "1A", "x").is_err());
    assert!(mk("a", "A", "").is_err());
    let e = mk("a", "A", "top\nsecret").unwrap_err();
    assert!(!e.contains("top"), "{e}");
}

#[test]
fn leaf_configs_are_made_once_per_host() {
    let c = creds();
    let a = c.server_config("api.github.com").unwrap();
    let b = c.server_config("api.github.com").unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.alpn_protocols, vec![b"http/1.1".to_vec()]);
    assert!(c.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
}

#[test]
fn an_echoed_secret_is_masked_in_every_encoding_the_proxy_sent_it_in() {
    let c = creds();
    let git = c.task_env()[1].1.clone();
    let basic = B64.encode("x-access-token:s3cret");
    let echoed = format!("echo: Basic {basic}, alone {}", B64.encode("s3cret"));
    let masked = c.mask_value("git.example", echoed.as_bytes()).unwrap();
    let masked = String::from_utf8(masked).unwrap();
    assert!(!masked.contains(&basic), "{masked}");
    assert!(!masked.contains(&B64.encode("s3cret")), "{masked}");
    assert!(masked.contains(&B64.encode(format!("x-access-token:{git}"))));
    assert!(masked.contains(&B64.encode(&git)));
}

#[test]
fn basic_payloads_of_any_user_are_masked_within_a_bound() {
    let c = creds();
    let ph = c.task_env()[0].1.clone();
    let basic = |user: &str| format!("Basic {}", B64.encode(format!("{user}:{ph}")));
    // A user of the task's choosing: swapped, and that payload masked whole.
    let (swapped, _) = c
        .swap_value("api.github.com", "authorization", basic("evil").as_bytes())
        .unwrap();
    let sent = B64.encode("evil:ghp_SECRET");
    assert_eq!(swapped, format!("Basic {sent}").into_bytes());
    let masked = c
        .mask_value("api.github.com", format!("echo: Basic {sent}").as_bytes())
        .unwrap();
    assert_eq!(masked, format!("echo: {}", basic("evil")).into_bytes());
    // A payload too long to hold back in every answer, or one past the session's
    // bound: sent as the task wrote it (the placeholder, worthless).
    let long = "u".repeat(MAX_BASIC_PAYLOAD_BYTES);
    assert!(
        c.swap_value("api.github.com", "authorization", basic(&long).as_bytes())
            .is_none()
    );
    for i in 1..MAX_BASIC_PAYLOADS {
        let user = format!("user{i}");
        assert!(
            c.swap_value("api.github.com", "authorization", basic(&user).as_bytes())
                .is_some(),
            "{user}"
        );
    }
    assert!(
        c.swap_value(
            "api.github.com",
            "authorization",
            basic("one-more").as_bytes()
        )
        .is_none()
    );
    // One already sent still is.
    assert!(
        c.swap_value("api.github.com", "authorization", basic("evil").as_bytes())
            .is_some()
    );
}
