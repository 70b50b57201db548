//! Calling an instance's admin service with the cluster token and a deadline,
//! with errors that say which instance and which call.

use std::time::Duration;

use fusion_wire::TOKEN_METADATA;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, Endpoint};

use crate::pb;
use crate::pb::admin_client::AdminClient;

#[derive(Clone)]
pub struct Admin {
    client: AdminClient<Channel>,
    token: MetadataValue<Ascii>,
    /// `instN at ADDRESS`, for messages.
    pub who: String,
}

impl Admin {
    /// A lazily connected client (the first call connects). Call it inside a
    /// tokio runtime (the channel's connection task needs one).
    pub fn new(name: &str, address: &str, token: &str) -> Result<Admin, String> {
        let channel = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| format!("{name}: bad admin address {address:?}: {e}"))?
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(2))
            .connect_lazy();
        let token = token
            .parse()
            .map_err(|_| "the cluster token is not valid metadata".to_string())?;
        Ok(Admin {
            client: AdminClient::new(channel)
                .max_decoding_message_size(256 << 20)
                .max_encoding_message_size(256 << 20),
            token,
            who: format!("{name} at {address}"),
        })
    }

    fn req<T>(&self, msg: T, timeout: Duration) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        r.metadata_mut().insert(TOKEN_METADATA, self.token.clone());
        r.set_timeout(timeout);
        r
    }

    fn fail(&self, call: &str) -> impl Fn(tonic::Status) -> String + '_ {
        let call = call.to_string();
        move |s| {
            let why = match s.code() {
                tonic::Code::Unavailable => format!("not reachable ({})", s.message()),
                tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => {
                    "no answer in time".to_string()
                }
                _ => s.message().to_string(),
            };
            format!("{}: {call}: {why}", self.who)
        }
    }

    pub async fn load(&self, r: pb::LoadRequest) -> Result<pb::LoadResponse, String> {
        let mut c = self.client.clone();
        c.load(self.req(r, Duration::from_secs(60)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("load"))
    }

    /// Begin phase `index`; `kernel_faults`: the indices of its faults the
    /// runner carries out in the kernel (the host leaves them out).
    pub async fn begin_phase(&self, index: u32, kernel_faults: Vec<u32>) -> Result<(), String> {
        let mut c = self.client.clone();
        let req = pb::PhaseRequest {
            index,
            kernel_faults,
        };
        c.begin_phase(self.req(req, Duration::from_secs(10)))
            .await
            .map(|_| ())
            .map_err(self.fail("begin phase"))
    }

    pub async fn quiesce(&self) -> Result<(), String> {
        let mut c = self.client.clone();
        c.quiesce(self.req(pb::Empty {}, Duration::from_secs(10)))
            .await
            .map(|_| ())
            .map_err(self.fail("quiesce"))
    }

    pub async fn stats(&self) -> Result<pb::StatsResponse, String> {
        let mut c = self.client.clone();
        c.stats(self.req(pb::Empty {}, Duration::from_secs(10)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("stats"))
    }

    /// The instance's counters now, decoded, with its clock (ns).
    pub async fn stats_decoded(&self) -> Result<(fusion_core::stats::Stats, u64), String> {
        let raw = self.stats().await?;
        Ok((crate::stats_codec::decode(&raw, &self.who)?, raw.now_ns))
    }

    pub async fn status(&self, timeout: Duration) -> Result<pb::StatusResponse, String> {
        let mut c = self.client.clone();
        c.status(self.req(pb::Empty {}, timeout))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("status"))
    }

    /// The oldest observations the instance has not handed over yet, at most
    /// `max` (see `HistoryRequest`).
    pub async fn history(&self, max: u32) -> Result<pb::HistoryResponse, String> {
        let mut c = self.client.clone();
        c.history(self.req(pb::HistoryRequest { max }, Duration::from_secs(60)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("history"))
    }

    pub async fn images(&self) -> Result<pb::ImagesResponse, String> {
        let mut c = self.client.clone();
        c.images(self.req(pb::Empty {}, Duration::from_secs(60)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("images"))
    }

    pub async fn transfers(&self, reset: bool) -> Result<pb::TransfersResponse, String> {
        let mut c = self.client.clone();
        c.transfers(self.req(pb::TransfersRequest { reset }, Duration::from_secs(10)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("transfers"))
    }

    pub async fn nextvals(&self) -> Result<pb::NextvalsResponse, String> {
        let mut c = self.client.clone();
        c.nextvals(self.req(pb::Empty {}, Duration::from_secs(10)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("sequence values"))
    }

    pub async fn shutdown(&self) -> Result<(), String> {
        let mut c = self.client.clone();
        c.shutdown(self.req(pb::Empty {}, Duration::from_secs(3)))
            .await
            .map(|_| ())
            .map_err(self.fail("shutdown"))
    }

    /// The instance crashes (see the `Crash` rpc).
    pub async fn crash(&self) -> Result<(), String> {
        let mut c = self.client.clone();
        c.crash(self.req(pb::Empty {}, Duration::from_secs(5)))
            .await
            .map(|_| ())
            .map_err(self.fail("crash"))
    }

    /// The alert log lines and recoveries since the last call.
    pub async fn events(&self) -> Result<pb::EventsResponse, String> {
        let mut c = self.client.clone();
        c.events(self.req(pb::Empty {}, Duration::from_secs(10)))
            .await
            .map(|r| r.into_inner())
            .map_err(self.fail("events"))
    }

    /// Stop running the instance before its process is frozen (`Hold`).
    pub async fn hold(&self) -> Result<(), String> {
        let mut c = self.client.clone();
        c.hold(self.req(pb::Empty {}, Duration::from_secs(5)))
            .await
            .map(|_| ())
            .map_err(self.fail("hold"))
    }

    /// Go on after `hold` and the process's thaw (`Release`).
    pub async fn release(&self) -> Result<(), String> {
        let mut c = self.client.clone();
        c.release(self.req(pb::Empty {}, Duration::from_secs(5)))
            .await
            .map(|_| ())
            .map_err(self.fail("release"))
    }
}
