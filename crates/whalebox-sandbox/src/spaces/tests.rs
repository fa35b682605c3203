use std::os::fd::AsFd;

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
