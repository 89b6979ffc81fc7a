//! The audit log's sequencer: the one worker, across every instance sharing the database, that
//! seals queued entries into their organizations' Merkle trees.
//!
//! A write's transaction only queues its entry, so the writes of an organization do not wait for
//! each other; the sequencer gives the entries their `seq` in the order they were queued, in
//! batches, and signs each grown tree's head (see the store's `seal_queued`). One instance holds
//! the lease (`audit-sequencer`, renewed while it works); the others try to take it when it runs
//! out, so an instance that dies leaves the queue to the next within one lease. An entry is in
//! the queue exactly when its change committed, so a crash between the commit and the sealing
//! loses nothing: the next holder seals it.
//!
//! The holder also prunes the log when `AUDIT_RETENTION_DAYS` is set: each organization's
//! entries older than that are deleted, and the signed head of the tree they made is kept as the
//! checkpoint the rest verifies from.

use std::sync::Arc;
use std::time::Duration;

use compliance_ports::{AuditRepository, Clock, RefreshLeases};
use tokio::sync::{Notify, watch};

use crate::Ports;
use crate::audit_signing::TreeHeadSigner;

/// The lease's key among the leases of the database.
const LEASE: &str = "audit-sequencer";

/// Tunables of the sequencer (`AUDIT_SEAL_*`, see docs/operations.md).
#[derive(Debug, Clone)]
pub struct SequencerSettings {
    /// How often the lease holder looks for queued entries when no write of its own instance woke
    /// it (the bound on the seal delay of entries written on other instances or by workers).
    pub poll_interval: Duration,
    /// How long the lease lasts; the holder renews it every third of it.
    pub lease: Duration,
    /// Entries sealed per transaction.
    pub batch: usize,
    /// How long entries are kept (`AUDIT_RETENTION_DAYS`); `None`: forever.
    pub retention: Option<time::Duration>,
    /// How often the holder prunes, when entries are not kept forever.
    pub prune_interval: Duration,
}

impl Default for SequencerSettings {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(100),
            lease: Duration::from_secs(15),
            batch: 1_000,
            retention: None,
            prune_interval: Duration::from_secs(60 * 60),
        }
    }
}

/// Seals the organizations' queued audit entries; [`App::take_audit_sequencer`](crate::App::take_audit_sequencer)
/// hands it to the process that runs it.
pub struct AuditSequencer {
    audit: Arc<dyn AuditRepository>,
    leases: Arc<dyn RefreshLeases>,
    clock: Arc<dyn Clock>,
    signer: TreeHeadSigner,
    settings: SequencerSettings,
    /// Poked by writes of this instance.
    work: Arc<Notify>,
    /// Bumped after each pass that sealed something (the log's reads wait on it).
    sealed: watch::Sender<u64>,
    /// Wakes the webhook worker: sealed entries are its events.
    deliveries: Arc<Notify>,
    /// This instance's name in the lease.
    holder: String,
}

impl AuditSequencer {
    pub(crate) fn new(
        ports: &Ports,
        signer: TreeHeadSigner,
        settings: SequencerSettings,
        signals: (Arc<Notify>, watch::Sender<u64>, Arc<Notify>),
    ) -> Self {
        let (work, sealed, deliveries) = signals;
        Self {
            audit: ports.audit.clone(),
            leases: ports.refresh_leases.clone(),
            clock: ports.clock.clone(),
            signer,
            settings,
            work,
            sealed,
            deliveries,
            holder: format!("sequencer-{}", hex::encode(rand::random::<[u8; 8]>())),
        }
    }

    /// Works until `stop` turns true: takes or renews the lease, seals while it holds it, waits
    /// for a poke, its interval or the stop. On stop it seals what is queued once more and gives
    /// the lease up, so another instance need not wait for it to run out.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let now = tokio::time::Instant::now;
        let (mut holding, mut poked) = (false, true);
        let (mut renew_at, mut seal_at, mut prune_at) = (now(), now(), now());
        while !*stop.borrow() {
            if now() >= renew_at {
                let took = self.take_lease().await;
                if took && !holding {
                    // A new holder seals at once what the last one left.
                    self.resign().await;
                    poked = true;
                }
                holding = took;
                renew_at = now() + self.settings.lease / 3;
            }
            if holding && (poked || now() >= seal_at) {
                self.seal_all().await;
                seal_at = now() + self.settings.poll_interval;
                if self.settings.retention.is_some() && now() >= prune_at {
                    self.prune_expired().await;
                    prune_at = now() + self.settings.prune_interval;
                }
            }
            // The holder wakes to renew its lease in time, however long its poll.
            let next = if holding { seal_at.min(renew_at) } else { renew_at };
            poked = tokio::select! {
                () = self.work.notified() => true,
                () = tokio::time::sleep_until(next) => false,
                _ = stop.changed() => false,
            };
        }
        if holding {
            self.seal_all().await;
            if let Err(error) = self.leases.release(LEASE, &self.holder).await {
                tracing::warn!(%error, "could not give the audit sequencer's lease up");
            }
        }
    }

    /// Seals batches until the queue is empty; whether anything was sealed.
    pub async fn seal_all(&self) -> bool {
        let mut sealed_any = false;
        loop {
            match self.audit.seal_queued(self.settings.batch, self.clock.as_ref(), &|head| self.signer.sign(head)).await
            {
                Ok(batch) if batch.entries == 0 => break,
                Ok(batch) => {
                    sealed_any = true;
                    if batch.entries < self.settings.batch {
                        break;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "could not seal queued audit entries; the next pass tries again");
                    break;
                }
            }
        }
        if sealed_any {
            self.sealed.send_modify(|passes| *passes += 1);
            self.deliveries.notify_one();
        }
        sealed_any
    }

    /// Deletes, in every organization, the sealed entries older than the retention period, each
    /// pruned prefix replaced by its signed tree head (a checkpoint); how many were deleted.
    /// Nothing when entries are kept forever.
    pub async fn prune_expired(&self) -> u64 {
        let Some(retention) = self.settings.retention else { return 0 };
        let now = self.clock.now();
        let before = compliance_domain::Timestamp::from_offset(now.to_offset() - retention);
        let organizations = match self.audit.organizations_with_entries_before(before).await {
            Ok(organizations) => organizations,
            Err(error) => {
                tracing::warn!(%error, "could not find audit entries to prune");
                return 0;
            }
        };
        let mut pruned = 0;
        for org in organizations {
            match self.audit.prune_audit(&org, before, now, &|head| self.signer.sign(head)).await {
                Ok(count) => pruned += count,
                Err(error) => tracing::warn!(%error, organization = %org, "could not prune the audit log"),
            }
        }
        if pruned > 0 {
            tracing::info!(pruned, "audit entries past their retention pruned under signed checkpoints");
        }
        pruned
    }

    async fn take_lease(&self) -> bool {
        let now = self.clock.now();
        let until = now.plus(time::Duration::try_from(self.settings.lease).unwrap_or(time::Duration::seconds(15)));
        match self.leases.acquire(LEASE, &self.holder, now, until).await {
            Ok(took) => took,
            Err(error) => {
                tracing::warn!(%error, "could not take the audit sequencer's lease");
                false
            }
        }
    }

    /// Heads signed by another key (the key changed, or no key was set and the process
    /// restarted) are signed again by this one, so that they verify.
    async fn resign(&self) {
        match self.audit.resign_tree_heads(self.signer.key_id(), &|head| self.signer.sign(head)).await {
            Ok(0) => {}
            Ok(count) => tracing::info!(count, "audit tree heads signed again with the current key"),
            Err(error) => tracing::warn!(%error, "could not sign the audit tree heads again"),
        }
    }
}
