//! `copy`, `template`, `file`, `lineinfile`, `blockinfile`, `ini_file`, `find`, `stat`, `slurp`,
//! `fetch` on a real host.

use serde_json::json;

use kinit::modules::ModuleResult;

use super::{Fixture, text};

pub async fn copy_content(fx: &Fixture<'_>) {
    let dest = fx.path("conf.txt");
    let probe = format!("cat {dest} 2>&1; stat -c %a {dest} 2>&1");
    let args = json!({"content": "hello\n", "dest": dest, "mode": "0640"});
    let r = fx.converges("copy", args, &probe).await;
    assert_eq!(r.data["mode"], "0640");
    // sha1 of "hello\n", as Ansible's `checksum`.
    assert_eq!(
        r.data["checksum"],
        "f572d396fae9206628714fb2ce00f72e94f2258f"
    );
    assert_eq!(fx.sh(&probe).await, "hello\n640\n");
    // The result names who owns the written file (over SSH the upload reads it back).
    let owner = fx.sh(&format!("stat -c '%u %g %U %G' {dest}")).await;
    assert_eq!(owner_of(&r), owner.trim_end());

    // Only the mode differs: changed, content untouched.
    let r = fx
        .run(
            "copy",
            json!({"content": "hello\n", "dest": dest, "mode": "u=rw,go="}),
        )
        .await;
    assert!(r.changed);
    assert_eq!(fx.sh(&probe).await, "hello\n600\n");

    // New content with backup: the old file is kept beside it; the mode is preserved.
    let r = fx
        .run(
            "copy",
            json!({"content": "bye\n", "dest": dest, "backup": true}),
        )
        .await;
    let backup = r.data["backup_file"].as_str().unwrap().to_string();
    assert!(
        backup.starts_with(&dest) && backup.ends_with('~'),
        "{backup}"
    );
    assert_eq!(fx.sh(&format!("cat {backup}")).await, "hello\n");
    assert_eq!(fx.sh(&probe).await, "bye\n600\n");
    assert_eq!(owner_of(&r), owner.trim_end());

    // force: no leaves an existing file alone.
    let r = fx
        .run(
            "copy",
            json!({"content": "other\n", "dest": dest, "force": false}),
        )
        .await;
    assert!(!r.changed);
    assert_eq!(fx.sh(&format!("cat {dest}")).await, "bye\n");

    // --diff shows before and after.
    let r = fx
        .try_run(
            "copy",
            json!({"content": "new\n", "dest": dest}),
            true,
            true,
        )
        .await
        .unwrap();
    let d = r.diff.unwrap();
    assert_eq!((text(&d.before), text(&d.after)), ("bye\n", "new\n"));

    // A missing parent directory is a failed result, not a transport error.
    let r = fx
        .run(
            "copy",
            json!({"content": "x", "dest": fx.path("no/such/dir/f")}),
        )
        .await;
    assert!(r.failed && r.msg.unwrap().contains("does not exist"));

    // Ownership: the file is given to a numeric owner (only meaningful as root).
    if fx.sh("id -u").await.trim() == "0" {
        let args = json!({"content": "o\n", "dest": fx.path("owned"), "owner": "1", "group": "1"});
        fx.converges(
            "copy",
            args,
            &format!("stat -c %u:%g {} 2>&1", fx.path("owned")),
        )
        .await;
        assert_eq!(
            fx.sh(&format!("stat -c %u:%g {}", fx.path("owned"))).await,
            "1:1\n"
        );
    }
}

/// A file result's `uid gid owner group`, as `stat -c '%u %g %U %G'` prints them.
fn owner_of(r: &ModuleResult) -> String {
    let d = &r.data;
    let name = |k: &str| d[k].as_str().unwrap_or("<missing>").to_string();
    format!(
        "{} {} {} {}",
        d["uid"],
        d["gid"],
        name("owner"),
        name("group")
    )
}

pub async fn copy_file_and_directory(fx: &Fixture<'_>) {
    fx.local_file("files/app.conf", "key=value\n");
    fx.local_file("tree/a.txt", "A\n");
    fx.local_file("tree/sub/b.txt", "B\n");
    let into = fx.path("etc");
    fx.sh(&format!("mkdir {into}")).await;

    // A file copied into an existing directory lands at dir/basename.
    let probe = format!("cat {into}/app.conf 2>&1");
    fx.converges(
        "copy",
        json!({"src": "files/app.conf", "dest": into}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "key=value\n");

    // A directory without a trailing slash is copied as itself, with its tree.
    let probe = format!(
        "cd {} && find tree -type f | sort | xargs cat 2>&1",
        fx.remote
    );
    fx.converges("copy", json!({"src": "tree", "dest": fx.remote}), &probe)
        .await;
    assert_eq!(fx.sh(&probe).await, "A\nB\n");

    // With a trailing slash only the contents are copied; one changed file is re-sent.
    let dest = fx.path("flat");
    let args = json!({"src": "tree/", "dest": dest, "mode": "0600"});
    fx.converges("copy", args.clone(), &format!("cat {dest}/sub/b.txt 2>&1"))
        .await;
    fx.local_file("tree/sub/b.txt", "B2\n");
    let r = fx.run("copy", args).await;
    assert!(r.changed);
    assert_eq!(
        fx.sh(&format!(
            "cat {dest}/a.txt {dest}/sub/b.txt; stat -c %a {dest}/a.txt"
        ))
        .await,
        "A\nB2\n600\n"
    );
}

pub async fn template(fx: &Fixture<'_>) {
    fx.local_file(
        "t/motd.j2",
        "host={{ inventory_hostname }}\n{% for i in [1,2] %}n{{ i }}\n{% endfor %}",
    );
    let dest = fx.path("motd");
    let probe = format!("cat {dest} 2>&1");
    let r = fx
        .converges(
            "template",
            json!({"src": "t/motd.j2", "dest": dest}),
            &probe,
        )
        .await;
    assert_eq!(r.data["src"], "t/motd.j2");
    assert_eq!(fx.sh(&probe).await, "host=testhost\nn1\nn2\n");
    let err = fx
        .try_run(
            "template",
            json!({"src": "nope.j2", "dest": dest}),
            false,
            false,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope.j2"));
}

pub async fn file_states(fx: &Fixture<'_>) {
    let d = fx.path("a/b/c");
    let probe = format!("stat -c '%F %a' {d} 2>&1");
    fx.converges(
        "file",
        json!({"path": d, "state": "directory", "mode": "0750"}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "directory 750\n");

    // Recursive mode on a tree.
    let top = fx.path("a");
    fx.sh(&format!("touch {top}/b/f")).await;
    let probe = format!("stat -c %a {top}/b/f {top}/b 2>&1");
    fx.converges(
        "file",
        json!({"path": top, "state": "directory", "mode": "0700", "recurse": true}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "700\n700\n");

    // Links.
    let link = fx.path("link");
    let probe = format!("readlink {link} 2>&1 || true");
    fx.converges(
        "file",
        json!({"path": link, "state": "link", "src": d}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, format!("{d}\n"));
    // Re-pointed to another target.
    fx.converges(
        "file",
        json!({"path": link, "state": "link", "src": top}),
        &probe,
    )
    .await;

    // Hard link.
    let f = fx.path("plain");
    fx.sh(&format!("echo x > {f}")).await;
    let hard = fx.path("hard");
    let probe = format!("stat -c %h {f}");
    fx.converges(
        "file",
        json!({"path": hard, "state": "hard", "src": f}),
        &probe,
    )
    .await;

    // state=file only changes attributes, and fails on a missing path.
    let probe = format!("stat -c %a {f}");
    fx.converges("file", json!({"path": f, "mode": "0604"}), &probe)
        .await;
    let r = fx
        .run("file", json!({"path": fx.path("missing"), "state": "file"}))
        .await;
    assert!(r.failed);
    // SELinux context parts are taken and, on a host without SELinux (these test hosts),
    // change nothing, as ansible-core's `set_context_if_different` returns early there.
    if fx
        .sh("test -e /sys/fs/selinux/enforce && echo on")
        .await
        .is_empty()
    {
        let r = fx
            .run(
                "file",
                json!({"path": f, "setype": "httpd_sys_content_t", "seuser": "_default", "selevel": "s0"}),
            )
            .await;
        assert!(!r.failed && !r.changed, "{:?}", r.msg);
    }

    // touch always reports a change (as Ansible), and creates the file once.
    let t = fx.path("touched");
    let c = fx.check("file", json!({"path": t, "state": "touch"})).await;
    assert!(c.changed);
    assert_eq!(
        fx.sh(&format!("test -e {t} || echo absent")).await,
        "absent\n"
    );
    assert!(
        fx.run("file", json!({"path": t, "state": "touch"}))
            .await
            .changed
    );
    assert_eq!(fx.sh(&format!("test -f {t} && echo file")).await, "file\n");

    // absent removes whole trees.
    let probe = format!("test -e {top} && echo present || echo gone");
    fx.converges("file", json!({"path": top, "state": "absent"}), &probe)
        .await;
    assert_eq!(fx.sh(&probe).await, "gone\n");
}

pub async fn lineinfile(fx: &Fixture<'_>) {
    let f = fx.path("sshd_config");
    fx.sh(&format!("printf '#Port 22\\nPermitRootLogin yes\\n' > {f}"))
        .await;
    let probe = format!("cat {f}");
    fx.converges(
        "lineinfile",
        json!({"path": f, "regexp": "^#?Port ", "line": "Port 2222"}),
        &probe,
    )
    .await;
    fx.converges(
        "lineinfile",
        json!({"path": f, "line": "UseDNS no", "insertbefore": "^PermitRootLogin"}),
        &probe,
    )
    .await;
    fx.converges(
        "lineinfile",
        json!({"path": f, "regexp": "^PermitRootLogin", "state": "absent"}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "Port 2222\nUseDNS no\n");

    // Python patterns: a back-reference in `regexp`, look-ahead, groups in `line`.
    fx.sh(&format!(
        "printf 'REF a REX\\nREF b REF\\nport=22\\n' > {f}"
    ))
    .await;
    fx.converges(
        "lineinfile",
        json!({"path": f, "regexp": r"^(REF) (\w+) \1$", "line": r"\2 by \g<1>", "backrefs": true}),
        &probe,
    )
    .await;
    fx.converges(
        "lineinfile",
        json!({"path": f, "regexp": r"^port=(?!8080)\d+$", "line": "port=8080"}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "REF a REX\nb by REF\nport=8080\n");
    // A pattern Python would refuse: the parameter, the pattern and why.
    let err = fx
        .try_run(
            "lineinfile",
            json!({"path": f, "regexp": "^(unclosed", "line": "x"}),
            false,
            false,
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "module `lineinfile`: `regexp` `^(unclosed` is not a valid regex: regex parse error:\n    \
         ^(unclosed\n     ^\nerror: unclosed group"
    );

    // A missing file: an error unless `create`.
    let n = fx.path("new.conf");
    let r = fx
        .run("lineinfile", json!({"path": n, "line": "a=1"}))
        .await;
    assert!(r.failed);
    fx.converges(
        "lineinfile",
        json!({"path": n, "line": "a=1", "create": true, "mode": "0600"}),
        &format!("cat {n} 2>&1; stat -c %a {n} 2>&1"),
    )
    .await;
    assert_eq!(
        fx.sh(&format!("cat {n}; stat -c %a {n}")).await,
        "a=1\n600\n"
    );
}

pub async fn blockinfile(fx: &Fixture<'_>) {
    let f = fx.path("hosts");
    fx.sh(&format!("printf '127.0.0.1 localhost\\n' > {f}"))
        .await;
    let probe = format!("cat {f}");
    let args = json!({"path": f, "block": "10.0.0.1 a\n10.0.0.2 b\n", "marker": "# {mark} kinit"});
    fx.converges("blockinfile", args, &probe).await;
    assert_eq!(
        fx.sh(&probe).await,
        "127.0.0.1 localhost\n# BEGIN kinit\n10.0.0.1 a\n10.0.0.2 b\n# END kinit\n"
    );
    let args = json!({"path": f, "block": "10.0.0.3 c", "marker": "# {mark} kinit"});
    fx.converges("blockinfile", args, &probe).await;
    let args = json!({"path": f, "state": "absent", "marker": "# {mark} kinit"});
    fx.converges("blockinfile", args, &probe).await;
    assert_eq!(fx.sh(&probe).await, "127.0.0.1 localhost\n");
}

pub async fn stat_slurp_fetch(fx: &Fixture<'_>) {
    let f = fx.path("data.bin");
    fx.sh(&format!(
        "printf 'abc' > {f}; chmod 0640 {f}; ln -s {f} {f}.lnk"
    ))
    .await;
    let r = fx.run("stat", json!({"path": f})).await;
    let s = &r.data["stat"];
    assert_eq!(s["exists"], true);
    assert_eq!(s["isreg"], true);
    assert_eq!(s["mode"], "0640");
    assert_eq!(s["size"], 3);
    assert_eq!(s["checksum"], "a9993e364706816aba3e25717850c26c9cd0d89d"); // sha1("abc")
    let r = fx
        .run(
            "stat",
            json!({"path": format!("{f}.lnk"), "checksum_algorithm": "sha256"}),
        )
        .await;
    assert_eq!(r.data["stat"]["islnk"], true);
    assert_eq!(r.data["stat"]["lnk_target"], f.as_str());
    let r = fx.run("stat", json!({"path": fx.path("none")})).await;
    assert_eq!(r.data["stat"], json!({"exists": false}));
    assert!(!r.changed);

    let r = fx.run("slurp", json!({"src": f})).await;
    assert_eq!(r.data["content"], "YWJj");
    assert!(
        fx.run("slurp", json!({"src": fx.path("none")}))
            .await
            .failed
    );

    let dest = fx.local_dir().join("fetched");
    let args = json!({"src": f, "dest": dest});
    let c = fx.check("fetch", args.clone()).await;
    assert!(c.changed);
    assert!(!dest.exists(), "check mode fetched");
    let r = fx.run("fetch", args.clone()).await;
    assert!(r.changed);
    let got = dest.join("testhost").join(f.trim_start_matches('/'));
    assert_eq!(std::fs::read(&got).unwrap(), b"abc");
    assert!(!fx.run("fetch", args).await.changed);
    let flat = fx.local_dir().join("flat.bin");
    let r = fx
        .run("fetch", json!({"src": f, "dest": flat, "flat": true}))
        .await;
    assert!(r.changed);
    assert_eq!(std::fs::read(&flat).unwrap(), b"abc");
    let r = fx
        .run(
            "fetch",
            json!({"src": fx.path("none"), "dest": dest, "fail_on_missing": false}),
        )
        .await;
    assert!(!r.failed && !r.changed);
}

pub async fn unknown_argument_is_explained(fx: &Fixture<'_>) {
    let err = fx
        .try_run(
            "copy",
            json!({"content": "x", "dst": "/tmp/x"}),
            false,
            false,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("module `copy`"), "{err}");
    assert!(
        err.contains("unknown argument `dst`, did you mean `dest`?"),
        "{err}"
    );
    let err = fx
        .try_run(
            "file",
            json!({"path": "/tmp/x", "state": "dir"}),
            false,
            false,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("`dir`") && err.contains("directory"), "{err}");
}

pub async fn copy_remote_src(fx: &Fixture<'_>) {
    let src = fx.path("on-host.txt");
    fx.sh(&format!("printf 'remote\\n' > {src}; chmod 0640 {src}"))
        .await;
    let dest = fx.path("copied.txt");
    let probe = format!("cat {dest} 2>&1; stat -c %a {dest} 2>&1");
    fx.converges(
        "copy",
        json!({"src": src, "dest": dest, "remote_src": true}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "remote\n640\n");
    // Into a folder, with a mode; then the source changes and is copied again.
    let dir = fx.path("d");
    fx.sh(&format!("mkdir {dir}")).await;
    let args = json!({"src": src, "dest": dir, "remote_src": true, "mode": "0600"});
    let probe = format!("cat {dir}/on-host.txt 2>&1; stat -c %a {dir}/on-host.txt 2>&1");
    fx.converges("copy", args.clone(), &probe).await;
    fx.sh(&format!("printf 'v2\\n' > {src}")).await;
    assert!(fx.run("copy", args).await.changed);
    assert_eq!(fx.sh(&probe).await, "v2\n600\n");
    let r = fx
        .run(
            "copy",
            json!({"src": fx.path("none"), "dest": dest, "remote_src": true}),
        )
        .await;
    assert!(r.failed);
}

pub async fn ini_file(fx: &Fixture<'_>) {
    // A new file in a new folder, mode set; then an option changed in place, a commented-out
    // option taken over, a section removed; the host's file is what upstream's would be.
    let f = fx.path("conf.d/app.ini");
    let probe = format!("cat {f} 2>&1; stat -c %a {f} 2>&1");
    let r = fx
        .converges(
            "ini_file",
            json!({"path": f, "section": "db", "option": "host", "value": "a", "mode": "0600"}),
            &probe,
        )
        .await;
    assert_eq!(r.msg.as_deref(), Some("section and option added"));
    assert_eq!(fx.sh(&probe).await, "\n[db]\nhost = a\n600\n");
    fx.sh(&format!(
        "printf '[db]\\nhost = a\\n#port = 1\\n[old]\\nx=1' > {f}"
    ))
    .await;
    let r = fx
        .converges(
            "ini_file",
            json!({"path": f, "section": "db", "option": "port", "value": 5432}),
            &probe,
        )
        .await;
    assert_eq!(r.msg.as_deref(), Some("option changed"));
    fx.converges(
        "ini_file",
        json!({"path": f, "section": "old", "state": "absent"}),
        &probe,
    )
    .await;
    assert_eq!(
        fx.sh(&format!("cat {f}")).await,
        "[db]\nhost = a\nport = 5432\n"
    );
    // With --diff: the content before and after.
    let r = fx
        .try_run(
            "ini_file",
            json!({"path": f, "section": "db", "option": "host", "value": "b"}),
            true,
            true,
        )
        .await
        .unwrap();
    let d = r.diff.unwrap();
    assert!(
        text(&d.before).contains("host = a") && text(&d.after).contains("host = b"),
        "{d:?}"
    );
    let r = fx
        .run(
            "ini_file",
            json!({"path": fx.path("none.ini"), "section": "s", "option": "o", "value": "v", "create": false}),
        )
        .await;
    assert!(r.failed && r.msg.unwrap().ends_with("none.ini does not exist!"));
}

pub async fn find(fx: &Fixture<'_>) {
    let root = fx.path("tree");
    fx.sh(&format!(
        "mkdir -p {root}/sub/deeper {root}/.h && printf 'port=1\\n' > {root}/a.conf && \
         printf 'x\\n' > {root}/b.txt && printf 'port=2\\n' > {root}/sub/c.conf && \
         printf 'y\\n' > {root}/sub/deeper/d.conf && printf 'z\\n' > {root}/.h/e.conf && \
         chmod 0600 {root}/b.txt && ln -s a.conf {root}/l.conf"
    ))
    .await;
    let paths = |r: &ModuleResult| -> Vec<String> {
        let mut v: Vec<String> = r.data["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().replace(&root, ""))
            .collect();
        v.sort();
        v
    };
    let r = fx
        .run("find", json!({"paths": root, "patterns": "*.conf"}))
        .await;
    assert!(!r.changed && !r.failed, "{r:?}");
    assert_eq!(paths(&r), ["/a.conf"]);
    assert_eq!(r.data["examined"], 5);
    let r = fx
        .run(
            "find",
            json!({"paths": root, "patterns": "*.conf", "recurse": true, "hidden": true}),
        )
        .await;
    assert_eq!(
        paths(&r),
        ["/.h/e.conf", "/a.conf", "/sub/c.conf", "/sub/deeper/d.conf"]
    );
    let r = fx
        .run(
            "find",
            json!({"paths": root, "recurse": true, "depth": 2, "contains": "port="}),
        )
        .await;
    assert_eq!(paths(&r), ["/a.conf", "/sub/c.conf"]);
    let r = fx
        .run(
            "find",
            json!({"paths": root, "file_type": "link", "get_checksum": true}),
        )
        .await;
    assert_eq!(paths(&r), ["/l.conf"]);
    assert_eq!(r.data["files"][0]["islnk"], true);
    // The stat dict is upstream's; the checksum is the host's sha1sum.
    let r = fx
        .run(
            "find",
            json!({"paths": root, "patterns": "b.txt", "get_checksum": true}),
        )
        .await;
    let f = &r.data["files"][0];
    assert_eq!(f["mode"], "0600");
    assert_eq!(f["size"], 2);
    assert_eq!(
        (f["isreg"].clone(), f["rusr"].clone(), f["roth"].clone()),
        (json!(true), json!(true), json!(false))
    );
    let sum = fx
        .sh(&format!("sha1sum < {root}/b.txt | cut -d' ' -f1"))
        .await;
    assert_eq!(f["checksum"], sum.trim());
    let want_user = fx.sh("id -un").await;
    assert_eq!(f["pw_name"], want_user.trim());
    // A path that is no folder is skipped with a warning message; the rest is searched.
    let r = fx
        .run(
            "find",
            json!({"paths": [format!("{root}/a.conf"), format!("{root}/sub")]}),
        )
        .await;
    assert_eq!(paths(&r), ["/sub/c.conf"]);
    assert_eq!(
        r.msg.as_deref(),
        Some("Not all paths examined, check warnings for details")
    );
    assert_eq!(
        r.data["skipped_paths"][format!("{root}/a.conf")],
        format!("'{root}/a.conf' is not a directory")
    );
}

/// `tempfile` makes a new, private file or folder under `path` each time, with upstream's name
/// shape, and a check-mode run is skipped (upstream declares no check mode) and makes nothing.
pub async fn tempfile(fx: &Fixture<'_>) {
    let root = fx.path("tmp");
    fx.sh(&format!("mkdir -p {root}")).await;
    let count = format!("ls -A {root} | wc -l");
    let c = fx.check("tempfile", json!({"path": root})).await;
    assert!(c.skipped && !c.changed, "{c:?}");
    assert_eq!(fx.sh(&count).await.trim(), "0");
    let a = fx
        .run("tempfile", json!({"path": root, "suffix": ".x"}))
        .await;
    let b = fx
        .run("tempfile", json!({"path": root, "state": "directory"}))
        .await;
    assert!(a.changed && b.changed, "{a:?} {b:?}");
    let (pa, pb) = (
        a.data["path"].as_str().unwrap(),
        b.data["path"].as_str().unwrap(),
    );
    let name = pa.strip_prefix(&format!("{root}/ansible.")).unwrap();
    let name = name.strip_suffix(".x").unwrap();
    assert!(
        name.len() == 8
            && name
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'),
        "{pa}"
    );
    assert_eq!(
        (a.data["mode"].as_str(), a.data["state"].as_str()),
        (Some("0600"), Some("file"))
    );
    assert_eq!(
        (b.data["mode"].as_str(), b.data["state"].as_str()),
        (Some("0700"), Some("directory"))
    );
    assert_eq!(
        fx.sh(&format!("stat -c '%F %a' {pa} {pb}")).await,
        "regular empty file 600\ndirectory 700\n"
    );
    let gone = fx
        .run("tempfile", json!({"path": format!("{root}/nope")}))
        .await;
    assert!(gone.failed, "{gone:?}");
    assert!(
        gone.msg
            .as_deref()
            .unwrap()
            .starts_with("[Errno 2] No such file or directory: "),
        "{gone:?}"
    );
}
