//! Receipt signatures: what a processed receipt's signature covers, and
//! checking one against the key the receiver knows for its signer.

use crate::identity;
use crate::keyring::KeyRing;
use crate::sync_state::Receipt;

/// What a receipt signature covers.
pub(super) const RECEIPT_DOMAIN: &str = "aea-receipt-v1";

/// The bytes a receipt's signature covers: every other field.
pub(super) fn signed_bytes(receipt: &Receipt) -> Vec<u8> {
    let mut unsigned = receipt.clone();
    unsigned.signature = None;
    let mut text = String::new();
    crate::message::canonical(
        &serde_json::to_value(&unsigned).expect("a receipt always serialises"),
        &mut text,
    );
    text.into_bytes()
}

/// Whether `receipt` is signed by the key the receiver knows for the agent
/// it names, and that agent is one the message went to.
pub(super) fn verify(
    receipt: &Receipt,
    recipients: &[String],
    ring: &KeyRing,
) -> std::result::Result<(), String> {
    if !recipients.contains(&receipt.by) {
        return Err(format!(
            "{} was not a recipient of this message",
            receipt.by
        ));
    }
    let key = ring
        .key_for(&receipt.by)
        .ok_or_else(|| format!("no key is known for {} (`aea agents trust`)", receipt.by))?;
    let signature = receipt.signature.as_ref().ok_or("unsigned")?;
    identity::verify_bytes(RECEIPT_DOMAIN, &signed_bytes(receipt), signature, &key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mailbox::Outcome;
    use crate::words::OrUnknown;

    /// A receipt that aea at commit 5ce80ec signed and pushed, kept byte for
    /// byte: a change to what a receipt signature covers must not reject
    /// the receipts already on remotes.
    #[test]
    fn a_receipt_signed_by_an_earlier_version_still_verifies() {
        let text = include_str!(
            "../../../../tests/signed-by-earlier-versions/receipt-6d04ff53-653c-46ed-85a0-d8fb468d494e.json"
        );
        let receipt: Receipt = serde_json::from_str(text).unwrap();
        let registry: aea_policy::registry::Registry = toml::from_str(
            "[agents.web]\nkey = \"ed25519:5d8cd34cfed9b5a4b49df948c9e6389090c7f5296aa5d25a54262e1e41267e98\"\nremote = \"/elsewhere.git\"\n",
        )
        .unwrap();
        let ring = KeyRing::new(registry, Some("api".into()), None);
        assert_eq!(verify(&receipt, &["web".into()], &ring), Ok(()));
        let mut changed = receipt.clone();
        changed.outcome = OrUnknown::Known(Outcome::Ignored);
        assert!(verify(&changed, &["web".into()], &ring).is_err());
    }
}
