//! Clock, randomness and the acting user: the inputs that make output vary
//! from run to run. Domain code takes them from a [`Runtime`] so tests can fix
//! them (see `env::AEA_TEST_NOW` and `env::AEA_TEST_SEED`).

use std::cell::Cell;

use chrono::{DateTime, Utc};

use crate::env::Env;

#[derive(Debug, Clone)]
pub struct Runtime {
    fixed_now: Option<DateTime<Utc>>,
    /// State of the seeded generator; `None` draws from the OS.
    seeded: Cell<Option<u64>>,
    user: String,
}

impl Runtime {
    pub fn new(env: &Env) -> Self {
        Runtime {
            fixed_now: env.fixed_now,
            seeded: Cell::new(env.seed),
            user: env.user.clone().unwrap_or_else(|| "unknown".to_string()),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.fixed_now.unwrap_or_else(Utc::now)
    }

    /// Who is acting, for `from.user` and the audit log.
    pub fn user(&self) -> &str {
        &self.user
    }

    pub(crate) fn random_u64(&self) -> u64 {
        match self.seeded.get() {
            Some(state) => {
                // splitmix64: tiny, well distributed, and only ever used in tests.
                let next = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                self.seeded.set(Some(next));
                let mut z = next;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            }
            None => uuid::Uuid::new_v4().as_u64_pair().0,
        }
    }

    /// Eight lower-case hex digits, the `<rand>` of a message file name.
    pub fn rand_hex8(&self) -> String {
        format!("{:08x}", self.random_u64() & 0xFFFF_FFFF)
    }

    /// A version 4 UUID in its hyphenated form.
    pub fn uuid(&self) -> String {
        let high = self.random_u64();
        let low = self.random_u64();
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&high.to_be_bytes());
        bytes[8..].copy_from_slice(&low.to_be_bytes());
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string()
    }
}
