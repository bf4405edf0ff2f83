//! Keys by id, the one map every keyring of the core keeps (SIV, FPE, GCM, HMAC): a lookup that
//! fails never echoes the id, since a data subject's key may be named by the subject (personal data).
#![forbid(unsafe_code)]

use std::collections::HashMap;

pub struct Keys<K> {
    map: HashMap<String, K>,
    /// what the keys are, for the refusal ("AES-SIV", "FPE", …)
    what: &'static str,
}

impl<K> Keys<K> {
    pub fn new(what: &'static str) -> Self {
        Keys { map: HashMap::new(), what }
    }

    pub fn insert(&mut self, id: String, key: K) {
        self.map.insert(id, key);
    }

    /// Forgets a key (its state zeroized by its own drop); true when it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        self.map.remove(id).is_some()
    }

    pub fn len(&self) -> u32 {
        self.map.len() as u32
    }

    pub fn get_mut(&mut self, id: &str) -> Result<&mut K, String> {
        let what = self.what;
        self.map.get_mut(id).ok_or_else(|| format!("no {what} key of that id in this keyring"))
    }
}

/// A keyring napi class: the struct holding its `Keys`, and the methods every keyring has
/// (`new`, `remove`, `size`); each keyring adds its own `add` and batch calls in an impl of its own.
/// The call site must have `napi_derive::napi` in scope.
macro_rules! keyring {
    ($(#[$doc:meta])* $name:ident, $key:ty, $what:literal) => {
        $(#[$doc])*
        #[napi]
        pub struct $name {
            keys: crate::keys::Keys<$key>,
        }

        #[napi]
        impl $name {
            #[napi(constructor)]
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                $name { keys: crate::keys::Keys::new($what) }
            }

            /// Forgets a key (its state dropped); true when it was there.
            #[napi]
            pub fn remove(&mut self, key_id: String) -> bool {
                self.keys.remove(&key_id)
            }

            #[napi(getter)]
            pub fn size(&self) -> u32 {
                self.keys.len()
            }
        }
    };
}

pub(crate) use keyring;
