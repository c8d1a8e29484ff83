//! A message being written, before it is addressed: what `send` and
//! `reply` put in it, checked before anything is written (subject, tags,
//! secrets, attachments inside the repository), and how it becomes a v1.0
//! [`Message`] for one recipient.

use std::fs;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{DraftProblem, Error, Result};
use crate::fsutil;
use crate::message::{
    Body, Content, Message, MessageType, Metadata, PROTOCOL_VERSION, Party, Priority,
    check_subject, format_time,
};
use crate::route::Route;
use crate::secrets::{self, OwnKeys};

/// Everything a message says except who it is from and to, and when.
#[derive(Debug, Clone)]
pub struct Draft {
    pub message_type: MessageType,
    pub priority: Priority,
    pub requires_response: bool,
    pub subject: String,
    pub body: String,
    /// Always a JSON object.
    pub context: serde_json::Map<String, Value>,
    pub tags: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
    /// `{path, sha256}` objects, see [`attachment`].
    pub attachments: Vec<Value>,
    /// The content of each attachment as read when it was hashed: what the
    /// sender keeps in its private `attachments/` for `aea sync` to carry.
    pub attachment_bytes: Vec<Vec<u8>>,
    pub reply_to: Option<String>,
    pub conversation: Option<String>,
}

impl Draft {
    /// A plain draft: normal priority, no context, tags or attachments.
    pub fn new(message_type: MessageType, subject: String, body: String) -> Self {
        Draft {
            message_type,
            priority: Priority::Normal,
            requires_response: false,
            subject,
            body,
            context: serde_json::Map::new(),
            tags: Vec::new(),
            expires_at: None,
            attachments: Vec::new(),
            attachment_bytes: Vec::new(),
            reply_to: None,
            conversation: None,
        }
    }

    /// Refuses what must not be sent: a subject that is not one short line,
    /// an empty or control-character tag, one of this user's own signing
    /// keys (`own_keys`) anywhere in the message or its attached files,
    /// and — unless `allow_secrets` — anything that looks like a secret in
    /// any string the message carries (subject, body, tags, and each key
    /// and string of context and attachments) or a private key in an
    /// attached file.
    pub fn check(&self, own_keys: &OwnKeys, allow_secrets: bool) -> Result<()> {
        check_subject(&self.subject)
            .map_err(|reason| Error::InvalidDraft(DraftProblem::Subject { reason }))?;
        if let Some(tag) = self
            .tags
            .iter()
            .find(|t| t.trim().is_empty() || t.chars().any(char::is_control))
        {
            return Err(Error::InvalidDraft(DraftProblem::Tag { tag: tag.clone() }));
        }
        // Refused even with `allow_secrets`: no message has a reason to
        // carry the key, and whoever reads it can sign mail as this agent,
        // which is what signatures are there to rule out.
        if let Some(field) = self.own_key_field(own_keys) {
            return Err(Error::OwnKeyDetected { field });
        }
        if allow_secrets {
            return Ok(());
        }
        match self.secret() {
            Some((kind, field)) => Err(Error::SecretDetected { kind, field }),
            None => Ok(()),
        }
    }

    /// Where one of `keys` is in the message, if anywhere.
    fn own_key_field(&self, keys: &OwnKeys) -> Option<String> {
        if keys.is_empty() {
            return None;
        }
        let in_files = self
            .attached_files()
            .find(|(_, bytes)| keys.find_in_bytes(bytes).is_some())
            .map(|(path, _)| format!("the attached file {path}"));
        // All the strings at once first: one pass over a large body, and a
        // key cut in two fields (half in the subject, half in the body) is
        // found too. Only then which field.
        let (mut all, mut names) = (String::new(), String::new());
        for text in [&self.subject, &self.body]
            .into_iter()
            .chain(&self.tags)
            .chain(self.conversation.as_ref())
            .chain(self.reply_to.as_ref())
        {
            all.push_str(text);
            all.push('\n');
        }
        let context = Value::Object(self.context.clone());
        let attachments = Value::Array(self.attachments.clone());
        for value in [&context, &attachments] {
            crate::secrets::names_and_strings(value, &mut names, &mut all);
        }
        if keys.find(&all).is_none() && keys.find(&names).is_none() {
            return in_files;
        }
        let field = if keys.find(&self.subject).is_some() {
            "the subject"
        } else if keys.find(&self.body).is_some() {
            "the body"
        } else if self.tags.iter().any(|t| keys.find(t).is_some()) {
            "a tag"
        } else if [&self.conversation, &self.reply_to]
            .into_iter()
            .flatten()
            .any(|id| keys.find(id).is_some())
        {
            "a conversation or reply-to id"
        } else if keys.find_in_value(&context).is_some() {
            "the context"
        } else if keys.find_in_value(&attachments).is_some() {
            "an attachment's path"
        } else {
            "the message (cut over several fields)"
        };
        Some(field.to_string())
    }

    /// Refuses a conversation or reply-to id that looks like a secret
    /// (unless `allow_secrets`): they are set after [`Self::check`] ran.
    pub fn check_ids(&self, allow_secrets: bool) -> Result<()> {
        if allow_secrets {
            return Ok(());
        }
        for (field, id) in [
            ("the conversation id", &self.conversation),
            ("the reply-to id", &self.reply_to),
        ] {
            if let Some(kind) = id.as_deref().and_then(secrets::find) {
                return Err(Error::SecretDetected {
                    kind,
                    field: field.to_string(),
                });
            }
        }
        Ok(())
    }

    /// The first secret of any kind in the message's strings, or a private
    /// key in an attached file, and where it is.
    fn secret(&self) -> Option<(&'static str, String)> {
        let in_field =
            |field: &str, kind: Option<&'static str>| kind.map(|k| (k, field.to_string()));
        in_field("the subject", secrets::find(&self.subject))
            .or_else(|| in_field("the body", secrets::find(&self.body)))
            .or_else(|| in_field("a tag", self.tags.iter().find_map(|t| secrets::find(t))))
            // Copied into the message as given: a token fits their
            // characters.
            .or_else(|| {
                in_field(
                    "the conversation id",
                    self.conversation.as_deref().and_then(secrets::find),
                )
            })
            .or_else(|| {
                in_field(
                    "the reply-to id",
                    self.reply_to.as_deref().and_then(secrets::find),
                )
            })
            .or_else(|| {
                let context = Value::Object(self.context.clone());
                in_field("the context", secrets::find_in_value(&context))
            })
            .or_else(|| {
                let kind = self.attachments.iter().find_map(secrets::find_in_value);
                in_field("an attachment's path", kind)
            })
            .or_else(|| {
                self.attached_files().find_map(|(path, bytes)| {
                    secrets::find_in_file(bytes).map(|k| (k, format!("the attached file {path}")))
                })
            })
    }

    /// Each attached file's path (as its entry names it) and content.
    fn attached_files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.attachments
            .iter()
            .zip(&self.attachment_bytes)
            .map(|(entry, bytes)| (entry["path"].as_str().unwrap_or("?"), bytes.as_slice()))
    }

    /// The v1.0 message of this draft from `from` to `to`, unsigned.
    pub(crate) fn message(
        &self,
        id: &str,
        now: DateTime<Utc>,
        from: &Party,
        to: &Route,
    ) -> Message {
        let to = match to {
            Route::Local(r) => Party {
                agent_id: r.id.clone(),
                repo_path: Some(r.mailbox.repo().display().to_string()),
                user: None,
                also_unsigned: false,
            },
            Route::Remote(_) | Route::Foreign(_) => Party {
                agent_id: to.agent_id().to_string(),
                repo_path: None,
                user: None,
                also_unsigned: false,
            },
        };
        Message {
            protocol_version: PROTOCOL_VERSION.into(),
            message_id: id.to_string(),
            message_type: self.message_type,
            timestamp: format_time(now),
            priority: self.priority,
            requires_response: self.requires_response,
            from: from.clone(),
            to,
            message: Content {
                subject: self.subject.clone(),
                body: Body::Text(self.body.clone()),
                context: Value::Object(self.context.clone()),
                attachments: self.attachments.clone(),
                extra: serde_json::Map::new(),
            },
            metadata: Metadata {
                conversation_id: Some(self.conversation.clone().unwrap_or_else(|| id.to_string())),
                reply_to: self.reply_to.clone(),
                tags: self.tags.clone(),
                broadcast: None,
                refs: None,
            },
            expires_at: self.expires_at.map(format_time),
            signature: None,
            digest: None,
            extra: serde_json::Map::new(),
        }
    }
}

/// `{path, sha256}` of a file inside the sender's repository `repo`, and
/// its content; a file outside it (also through a symlink), or over the
/// attachment limit, is refused.
pub fn attachment(path: &Path, repo: &Path) -> Result<(Value, Vec<u8>)> {
    let real = fs::canonicalize(path).map_err(|e| Error::io("read attachment", path, e))?;
    let relative = real
        .strip_prefix(repo)
        .map_err(|_| Error::AttachmentOutside {
            path: path.to_path_buf(),
        })?;
    let bytes = crate::attachments::read_for_sending(&real)?;
    let named = serde_json::json!({
        "path": relative.to_string_lossy().replace('\\', "/"),
        "sha256": fsutil::sha256_hex(&bytes),
    });
    Ok((named, bytes))
}

#[cfg(test)]
mod tests {
    use super::Draft;
    use crate::error::Error;
    use crate::message::MessageType;
    use crate::secrets::OwnKeys;

    const SEED: [u8; 32] = [
        0xd4, 0x3a, 0x9f, 0x01, 0x77, 0x2b, 0xc8, 0x5e, 0x10, 0xaa, 0x42, 0x6d, 0x93, 0x0f, 0xe1,
        0x58, 0x3c, 0xb7, 0x24, 0x86, 0x5a, 0xf2, 0x19, 0x6e, 0xd0, 0x07, 0x8b, 0x31, 0xc4, 0x9d,
        0x62, 0xfe,
    ];
    const HEX: &str = "d43a9f01772bc85e10aa426d930fe1583cb724865af2196ed0078b31c49d62fe";

    fn draft(body: &str) -> Draft {
        Draft::new(MessageType::Question, "Hi".into(), body.into())
    }

    fn attach(draft: &mut Draft, path: &str, bytes: &[u8]) {
        draft
            .attachments
            .push(serde_json::json!({"path": path, "sha256": "0".repeat(64)}));
        draft.attachment_bytes.push(bytes.to_vec());
    }

    #[test]
    fn check_refuses_bad_subjects_tags_and_secrets() {
        let none = OwnKeys::default();
        let ok = draft("text");
        assert!(ok.check(&none, false).is_ok());
        let long = Draft::new(MessageType::Question, "x".repeat(201), String::new());
        assert!(long.check(&none, false).is_err());
        let mut tagged = ok.clone();
        tagged.tags = vec!["a\u{1b}b".into()];
        assert!(tagged.check(&none, false).is_err());
        let mut secret = ok.clone();
        secret
            .context
            .insert("k".into(), "aws AKIAIOSFODNN7EXAMPLE here".into());
        let refused = secret.check(&none, false);
        assert!(
            matches!(&refused, Err(Error::SecretDetected { kind: "AWS access key id", field }) if field == "the context"),
            "an access key in the context is refused: {refused:?}"
        );
        assert!(secret.check(&none, true).is_ok());
    }

    /// The own key is refused in every field and file, with or without
    /// `allow_secrets`, and the error names the field, never the key.
    #[test]
    fn check_refuses_the_own_key_whatever_the_flags() {
        let keys = OwnKeys::new([&SEED]);
        let mut in_subject = draft("text");
        in_subject.subject = format!("key {}", &HEX.to_uppercase());
        let mut in_tag = draft("text");
        in_tag.tags = vec![HEX.into()];
        let mut in_context = draft("text");
        in_context.context.insert(
            "deploy".into(),
            serde_json::json!({"seed": format!("0x{HEX}")}),
        );
        let mut in_file = draft("text");
        attach(
            &mut in_file,
            "notes/key.txt",
            format!("SIGNING_KEY={HEX}\n").as_bytes(),
        );
        let mut split = draft(&HEX[32..]);
        split.subject = format!("part one {}", &HEX[..32]);
        let mut split_context = draft("text");
        split_context.context.insert("a".into(), HEX[..30].into());
        split_context.context.insert("b".into(), HEX[30..].into());
        let cases = [
            (
                draft(&format!("here:\n{}\n{}", &HEX[..20], &HEX[20..])),
                "the body",
            ),
            (in_subject, "the subject"),
            (in_tag, "a tag"),
            (in_context, "the context"),
            (in_file, "the attached file notes/key.txt"),
            (split, "the message (cut over several fields)"),
            (split_context, "the context"),
        ];
        for (message, expected) in cases {
            for allow_secrets in [false, true] {
                let err = message.check(&keys, allow_secrets).unwrap_err();
                assert!(
                    matches!(&err, Error::OwnKeyDetected { field } if field == expected),
                    "{expected}: {err:?}"
                );
                let shown = err.to_string();
                assert!(!shown.to_lowercase().contains(&HEX[..16]), "{shown}");
            }
        }
        assert!(draft("no key here").check(&keys, false).is_ok());
    }

    /// Attached files are scanned for the own key and private keys only:
    /// a token in a test fixture is the file's business.
    #[test]
    fn check_scans_attached_files_for_private_keys_only() {
        let none = OwnKeys::default();
        let mut pem = draft("see the file");
        attach(
            &mut pem,
            "ops/deploy.pem",
            b"-----begin private key-----\nMC4CAQAwBQYDK2VwBCIEIJ3l0b2mXh7dQz6c8vYkR1sT9aPfWgLqN4oUeHxCjZyB\n",
        );
        let err = pem.check(&none, false).unwrap_err();
        assert!(
            matches!(&err, Error::SecretDetected { kind: "private key block", field } if field == "the attached file ops/deploy.pem"),
            "{err:?}"
        );
        assert!(pem.check(&none, true).is_ok());
        let mut fixture = draft("see the file");
        attach(
            &mut fixture,
            "tests/fixture.rs",
            b"const TOKEN: &str = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\";",
        );
        assert!(fixture.check(&none, false).is_ok());
    }
}
