//! `compliance-server`: serve the API, migrate the database, or administer tenants.

mod admin;
mod allocator;
mod cli;
mod config;
mod serve;
mod shutdown;
mod wiring;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    allocator::return_freed_memory_promptly();
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
