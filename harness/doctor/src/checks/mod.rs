//! The checks: pure functions of [`Facts`] (and the selected trials), one row per component,
//! each with its state, the evidence it rests on and, where something is wrong, the fix. They
//! never touch the host, so they are tested on recorded facts.

mod capability;
mod outlook;
mod stack;
mod storage;

use serde::{Deserialize, Serialize};

pub use capability::Can;
pub use outlook::{Conclusion, Expectation, Outcome, TrialOutlook, outlook};

use super::facts::Facts;
use gds_model::scenario::TrialSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Ok,
    Warn,
    Fail,
    Unknown,
}

impl State {
    pub fn label(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Warn => "warn",
            State::Fail => "FAIL",
            State::Unknown => "unknown",
        }
    }

    /// Worth a line in the short form.
    pub fn is_problem(self) -> bool {
        matches!(self, State::Warn | State::Fail)
    }
}

/// One row of the doctor's table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub component: String,
    pub state: State,
    pub evidence: String,
    pub fix: Option<String>,
}

impl Check {
    pub(crate) fn new(
        component: impl Into<String>,
        state: State,
        evidence: impl Into<String>,
    ) -> Check {
        Check {
            component: component.into(),
            state,
            evidence: evidence.into(),
            fix: None,
        }
    }

    pub(crate) fn ok(component: impl Into<String>, evidence: impl Into<String>) -> Check {
        Check::new(component, State::Ok, evidence)
    }

    pub(crate) fn unknown(component: impl Into<String>, why: impl Into<String>) -> Check {
        Check::new(component, State::Unknown, why)
    }

    pub(crate) fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// Every check, in the order of the stack: driver and GPUs, cuFile and nvidia-fs, cufile.json,
/// the data dir's storage, the platform, KvikIO, the GDS tools. The trials only matter to the
/// free-space check; what they can expect here is [`outlook`]'s business.
pub fn checks(facts: &Facts, trials: &[TrialSpec]) -> Vec<Check> {
    let mut rows = Vec::new();
    stack::driver(facts, &mut rows);
    stack::cufile(facts, &mut rows);
    stack::config(facts, &mut rows);
    storage::data_dir(facts, trials, &mut rows);
    storage::platform(facts, &mut rows);
    stack::kvikio(facts, &mut rows);
    stack::tools(facts, &mut rows);
    rows
}
