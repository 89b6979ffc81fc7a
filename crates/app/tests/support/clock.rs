//! A clock that stands still until the test moves it.

use std::sync::Mutex;

use compliance_domain::Timestamp;
use compliance_ports::Clock;

pub struct FakeClock {
    now: Mutex<Timestamp>,
}

impl FakeClock {
    pub fn at(now: Timestamp) -> Self {
        Self { now: Mutex::new(now) }
    }

    pub fn advance(&self, by: time::Duration) {
        let mut now = self.now.lock().unwrap();
        *now = now.plus(by);
    }

    pub fn set(&self, to: Timestamp) {
        *self.now.lock().unwrap() = to;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap()
    }
}
