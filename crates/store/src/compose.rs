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
use crate::secrets;

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
    /// an empty or control-character tag, and — unless `allow_secrets` —
    /// anything that looks like a secret in any string the message carries
    /// (subject, body, tags, and each key and string of context and
    /// attachments).
    pub fn check(&self, allow_secrets: bool) -> Result<()> {
        check_subject(&self.subject)
            .map_err(|reason| Error::InvalidDraft(DraftProblem::Subject { reason }))?;
        if let Some(tag) = self
            .tags
            .iter()
            .find(|t| t.trim().is_empty() || t.chars().any(char::is_control))
        {
            return Err(Error::InvalidDraft(DraftProblem::Tag { tag: tag.clone() }));
        }
        if allow_secrets {
            return Ok(());
        }
        let found = [self.subject.as_str(), self.body.as_str()]
            .into_iter()
            .chain(self.tags.iter().map(String::as_str))
            .find_map(secrets::find)
            .or_else(|| secrets::find_in_value(&Value::Object(self.context.clone())))
            .or_else(|| self.attachments.iter().find_map(secrets::find_in_value));
        match found {
            Some(kind) => Err(Error::SecretDetected { kind }),
            None => Ok(()),
        }
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
            },
            Route::Remote(_) | Route::Foreign(_) => Party {
                agent_id: to.agent_id().to_string(),
                repo_path: None,
                user: None,
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
    use crate::message::MessageType;

    #[test]
    fn check_refuses_bad_subjects_tags_and_secrets() {
        let ok = Draft::new(MessageType::Question, "Hi".into(), "text".into());
        assert!(ok.check(false).is_ok());
        let long = Draft::new(MessageType::Question, "x".repeat(201), String::new());
        assert!(long.check(false).is_err());
        let mut tagged = ok.clone();
        tagged.tags = vec!["a\u{1b}b".into()];
        assert!(tagged.check(false).is_err());
        let mut secret = ok.clone();
        secret
            .context
            .insert("k".into(), "aws AKIAIOSFODNN7EXAMPLE here".into());
        let refused = secret.check(false).is_err();
        assert!(refused, "an access key in the context is refused");
        assert!(secret.check(true).is_ok());
    }
}
