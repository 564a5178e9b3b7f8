//! What is wrong with a scenario: the field, by its dotted path, and what is wrong with it.

/// An invalid scenario: which field, and what is wrong with it. Shown with the nearest valid name
/// when the message names an unknown one (`rtcc_core::suggest::annotate`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {field}: {}", rtcc_core::suggest::annotate(message))]
pub struct ScenarioError {
    /// The scenario's file name (or "scenario").
    pub source_name: String,
    /// Dotted path of the field, e.g. `flows[1].params.rate` (empty for the whole file).
    pub field: String,
    pub message: String,
}

/// A problem found while checking one part of a scenario: the field's full dotted path and the
/// message. [`ScenarioError`] adds the file's name.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The error of the file `source_name`.
    pub fn in_file(self, source_name: &str) -> ScenarioError {
        ScenarioError {
            source_name: source_name.into(),
            field: self.field,
            message: self.message,
        }
    }
}

impl From<(String, String)> for FieldError {
    fn from((field, message): (String, String)) -> FieldError {
        FieldError { field, message }
    }
}

/// Where a flow's fields are, for error paths: `flows[3]`.
#[derive(Debug, Clone, Copy)]
pub struct At(pub usize);

impl At {
    /// The dotted path of `field` of this flow: `flows[3].fps`.
    pub fn field(self, field: &str) -> String {
        format!("flows[{}].{field}", self.0)
    }

    /// An error at `field` of this flow.
    pub fn err(self, field: &str, message: impl Into<String>) -> FieldError {
        FieldError::new(self.field(field), message)
    }

    /// An error at `field.sub` of this flow (`field` itself when `sub` is empty), for values
    /// whose own parser names the bad sub-field.
    pub fn sub_err(self, field: &str, sub: &str, message: impl Into<String>) -> FieldError {
        match sub.is_empty() {
            true => self.err(field, message),
            false => self.err(&format!("{field}.{sub}"), message),
        }
    }
}
