//! An upload cancelled mid-transfer (Ctrl-C drops the task's future) leaves no
//! `.name.kinit-tmp-*` beside the destination once the connection closes.

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
