//! Upload temp files: an upload cancelled mid-transfer (Ctrl-C drops the task's future)
//! leaves no `.name.kinit-tmp-*` beside the destination once the connection closes, and one
//! cut by a killed sshd is removed by the next upload to the same destination.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use kinit::transport::Source;
use kinit::transport::ssh::SshConnection;

use crate::fixtures::sshd::SshLab;

fn temps(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("kinit-tmp"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_upload_leaves_no_temp_file() {
    let lab = SshLab::new(1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let dest = dir.path().join("big.bin").display().to_string();
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let big = Source::Bytes(vec![7u8; 64 << 20]);
    let appeared = async {
        while temps(dir.path()).is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::select! {
        r = c.put(&big, &dest, Some(0o600)) => panic!("upload finished before it was cancelled: {r:?}"),
        _ = appeared => {}
    }
    // The future is dropped: the temp file is still there until the connection closes.
    assert_eq!(temps(dir.path()).len(), 1);
    c.close().await;
    assert!(temps(dir.path()).is_empty(), "{:?}", temps(dir.path()));
    assert!(!Path::new(&dest).exists());
}

/// Waits until `dir` holds a temp file and returns its name.
async fn first_temp(dir: &Path) -> String {
    loop {
        if let Some(n) = temps(dir).pop() {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Regression: an upload cut by a killed sshd left its temp file on the host for good (the
/// connection that could remove it was gone). The next upload to the same destination, on
/// the new connection, removes it, and leaves alone a user's file named like one and a
/// kinit-named file another user owns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_cut_by_killed_sshd_leaves_no_temp_after_the_next_upload() {
    let mut lab = SshLab::new(1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let dest = dir.path().join("big.bin").display().to_string();
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let big = Source::Bytes(vec![7u8; 64 << 20]);
    let cut = {
        let upload = c.put(&big, &dest, Some(0o600));
        tokio::pin!(upload);
        let cut = tokio::select! {
            r = &mut upload => panic!("upload finished before sshd was killed: {r:?}"),
            n = first_temp(dir.path()) => n,
        };
        lab.hosts[0].kill();
        let err = upload.await.expect_err("the connection was cut");
        assert!(err.to_string().contains("lost"), "{err}");
        cut
    };
    c.close().await;
    assert_eq!(
        temps(dir.path()),
        std::slice::from_ref(&cut),
        "the cut upload's temp file stays"
    );

    // Not kinit's to remove: a user's file with a similar name, and a file named exactly
    // like a stale kinit temp file but owned by another user (root, not the SSH user).
    let user_file = ".big.bin.kinit-tmp-notes";
    std::fs::write(dir.path().join(user_file), "mine").unwrap();
    let (prefix, seq) = cut.rsplit_once('-').unwrap();
    let foreign = format!("{prefix}-{}", seq.parse::<u64>().unwrap() + 1000);
    std::fs::write(dir.path().join(&foreign), "root's").unwrap();

    lab.hosts[0].restart();
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    c.put(&Source::Bytes(b"small".to_vec()), &dest, Some(0o600))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"small");
    let mut left = temps(dir.path());
    left.sort();
    let mut kept = vec![user_file.to_string(), foreign];
    kept.sort();
    assert_eq!(left, kept, "only the cut upload's temp file is removed");
    c.close().await;
}

/// An upload still in flight keeps its temp file while another upload to the same
/// destination finishes (and tidies), then completes itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_in_flight_keeps_its_temp_file_when_another_finishes() {
    let lab = SshLab::new(1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let dest = dir.path().join("big.bin").display().to_string();
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let big = Source::Bytes(vec![7u8; 64 << 20]);
    let small_src = Source::Bytes(b"small".to_vec());
    {
        let upload = c.put(&big, &dest, Some(0o600));
        tokio::pin!(upload);
        let flying = tokio::select! {
            r = &mut upload => panic!("upload finished too soon: {r:?}"),
            n = first_temp(dir.path()) => n,
        };
        let small = c.put(&small_src, &dest, None);
        tokio::select! {
            r = &mut upload => panic!("the big upload finished before the small one: {r:?}"),
            r = small => r.unwrap(),
        }
        assert_eq!(std::fs::read(&dest).unwrap(), b"small");
        assert_eq!(
            temps(dir.path()),
            [flying],
            "the upload in flight keeps its temp file"
        );
        upload.await.unwrap();
    }
    assert_eq!(std::fs::metadata(&dest).unwrap().len(), 64 << 20);
    assert!(temps(dir.path()).is_empty(), "{:?}", temps(dir.path()));
    c.close().await;
}
