//! `kinit plan`: the expanded cluster, then each phase with the plays and tasks the bundled
//! playbooks give it; with `--render DIR`, every file a deployment would write. Reads only
//! (the state folder's location, never the folder).

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::cli::{PlanArgs, PlanFormat};
use crate::cluster::Cluster;
use crate::config::PlanConfig;
use crate::deploy::{
    DeployError, catalog, cluster_inventory, load_site, render, state, state_of, state_vars,
};
use crate::playbook::{Loader, Playbook};
use crate::{Error, Outcome};

/// `kinit plan`: the expanded cluster, then each phase with the plays and tasks the bundled
/// playbooks give it. Reads only.
pub fn plan(args: PlanArgs) -> Result<Outcome, Error> {
    let cfg = PlanConfig::from_args(&args, Path::new("."))?;
    let cluster = &cfg.cluster.cluster;
    let (loader, book) = load_site(args.playbook_dir.as_deref())?;
    if let Some(dir) = &args.render {
        return render_files(cluster, &cfg.cluster.extra_vars, loader, &book, dir);
    }
    let phases = catalog::listing(&book).map_err(DeployError::from)?;
    let text = match cfg.format {
        PlanFormat::Table => format!(
            "{}{}",
            crate::cluster::plan::render_table(cluster),
            catalog::render(&phases)
        ),
        PlanFormat::Json => crate::cluster::plan::render_json(cluster, &phases),
    };
    print!("{text}");
    Ok(Outcome::Success)
}

/// `kinit plan --render DIR`: the variables `kinit run` would pass (state paths of the
/// cluster, a placeholder for the generated Windows password), the user's `-e` over them,
/// then the render (see `render`). Reads the state folder's location, never the folder.
fn render_files(
    cluster: &Cluster,
    user_vars: &crate::vars::VarMap,
    loader: Arc<Loader>,
    book: &Playbook,
    dir: &Path,
) -> Result<Outcome, Error> {
    let state = state_of(cluster)?;
    render::prepare_dir(dir).map_err(DeployError::from)?;
    let mut extra_vars = state_vars(&state, &state.path(state::RUNS).join("render"));
    extra_vars.insert(
        "kinit_windows_admin_password".into(),
        json!(render::PASSWORD_PLACEHOLDER),
    );
    extra_vars.insert("kinit_purge_cache".into(), json!(false));
    crate::vars::overlay(&mut extra_vars, user_vars);
    let sink = render::render(render::RenderJob {
        cluster,
        loader,
        book,
        inventory: cluster_inventory(cluster, &state),
        extra_vars,
        dir,
        state_dir: &state.root,
    })?;
    print!("{}", sink.index());
    println!(
        "\n{} files rendered for cluster `{}` into {}",
        sink.count(),
        cluster.name,
        dir.display()
    );
    Ok(Outcome::Success)
}
