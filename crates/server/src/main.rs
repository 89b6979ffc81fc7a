//! `compliance-server`: serve the API, migrate the database, or administer tenants.

mod admin;
mod cli;
mod config;
mod serve;
mod shutdown;
mod wiring;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// mimalloc instead of glibc's allocator: in the request path's profile glibc's malloc and free
/// took a fifth of the server's CPU. Without transparent huge pages (`no_thp`): with them, every
/// arena mimalloc touched became 2 MiB of resident memory (peak RSS 45 MiB instead of 26 MiB).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The document needs no configuration, database or logging.
    if let Command::Openapi = cli.command {
        print!("{}", compliance_http::openapi::document_json());
        return ExitCode::SUCCESS;
    }
    let result = config::Config::from_env().and_then(|config| {
        config::init_logging(&config);
        // Start-up and background work (the automation worker) run on this runtime; requests and
        // their use cases on actix's threads (see `compliance_http::AppState`).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.use_case_threads)
            .max_blocking_threads(config.blocking_threads())
            .enable_all()
            .build()?;
        match cli.command {
            Command::Serve => {
                let served = actix_web::rt::System::new().block_on(serve::serve(config, runtime.handle().clone()));
                runtime.shutdown_timeout(shutdown::RUNTIME_SHUTDOWN);
                served.map(|()| tracing::info!("shutdown complete"))
            }
            Command::Migrate => runtime.block_on(wiring::migrate(&config)),
            Command::Admin { command } => runtime.block_on(admin::run(&config, command)),
            Command::Openapi => Ok(()),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
