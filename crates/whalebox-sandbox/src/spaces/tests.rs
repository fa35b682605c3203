use std::os::fd::{AsFd, OwnedFd};

use super::*;

#[test]
fn namespace_descriptors_cross_a_socket_with_their_names() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let net = std::fs::File::open("/proc/self/ns/net").unwrap();
    let mnt = std::fs::File::open("/proc/self/ns/mnt").unwrap();
    send_namespaces(
        &a,
        &[(Kind::Network, net.as_fd()), (Kind::Mount, mnt.as_fd())],
    )
    .unwrap();
    let got = receive_namespaces(&b).unwrap();
    let kinds: Vec<Kind> = got.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [Kind::Network, Kind::Mount]);
    // The very namespaces sent: the same inode as our own.
    use std::os::unix::fs::MetadataExt;
    let ours = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
    let theirs = std::fs::File::from(got.into_iter().next().unwrap().1)
        .metadata()
        .unwrap()
        .ino();
    assert_eq!(ours, theirs);
}

#[test]
fn no_namespaces_is_an_answer_and_a_closed_socket_is_not() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    send_namespaces(&a, &[]).unwrap();
    assert!(receive_namespaces(&b).unwrap().is_empty());
    drop(a);
    let err = receive_namespaces(&b).unwrap_err();
    assert!(err.contains("closed"), "{err}");
}

#[test]
fn a_descriptor_of_another_kind_is_refused_by_join() {
    // A network namespace's descriptor offered as a mount namespace: setns checks the
    // type, so a forged hand-over cannot put a task anywhere else.
    let net = std::fs::File::open("/proc/self/ns/net").unwrap();
    let err = join(&[(Kind::Mount, net.into())]).unwrap_err();
    assert!(err.contains("mnt"), "{err}");
}

#[test]
fn only_the_very_namespaces_expected_pass_the_check() {
    let net = std::fs::File::open("/proc/self/ns/net").unwrap();
    let ours = Identity::of(Kind::Network, &net).unwrap();
    // The expected one passes.
    let fd: OwnedFd = std::fs::File::open("/proc/self/ns/net").unwrap().into();
    verify(&[(Kind::Network, fd)], &[ours]).unwrap();
    // Another namespace of the same kind (a forged answer) does not.
    let other = Identity {
        ino: ours.ino + 1,
        ..ours
    };
    let fd: OwnedFd = std::fs::File::open("/proc/self/ns/net").unwrap().into();
    assert!(verify(&[(Kind::Network, fd)], &[other]).is_err());
    // A pidfd, which setns would also take (and act on with the joiner's rights), does not.
    // SAFETY: pidfd_open of our own pid, no flags.
    let raw = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, std::process::id(), 0) };
    assert!(raw >= 0);
    // SAFETY: a descriptor the kernel just gave us.
    let pidfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw as i32) };
    let err = verify(&[(Kind::Network, pidfd)], &[ours]).unwrap_err();
    assert!(err.contains("not one"), "{err}");
    // None where the server made one ("no namespaces" from whoever answers) does not.
    assert!(verify(&[], &[ours]).is_err());
}
