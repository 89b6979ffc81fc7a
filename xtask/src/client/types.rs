//! Rust types for the document's schemas: the subset utoipa emits (objects, string enumerations,
//! arrays, `$ref`, `allOf` of objects, `oneOf: [T, null]`, `type: [T, "null"]`, maps through
//! `additionalProperties`, integer formats). What has no faithful Rust shape (`anyOf`, a `oneOf`
//! of several types, a type list such as `["string", "number"]`) becomes `serde_json::Value`.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use serde_json::{Map, Value};

use super::names::{doc, pascal, snake};

const REF_PREFIX: &str = "#/components/schemas/";
const VALUE: &str = "serde_json::Value";
const OBJECT: &str = "serde_json::Map<String, serde_json::Value>";

/// The generated type declarations, in the order they were made.
pub struct Types<'a> {
    schemas: &'a Map<String, Value>,
    /// Inline string enumerations by their values, so that `authType` is one enum wherever it appears.
    inline_enums: BTreeMap<Vec<String>, String>,
    /// Every type name declared, components first.
    taken: BTreeSet<String>,
    pub out: String,
}

/// A field's type as Rust sees it, before the optionality its object gives it.
pub struct FieldType {
    pub rust: String,
    pub nullable: bool,
}

impl<'a> Types<'a> {
    pub fn new(schemas: &'a Map<String, Value>) -> Self {
        Self { schemas, inline_enums: BTreeMap::new(), taken: schemas.keys().cloned().collect(), out: String::new() }
    }

    /// Declares every component schema.
    pub fn components(&mut self) -> Result<()> {
        for (name, schema) in self.schemas {
            self.component(name, schema)?;
        }
        Ok(())
    }

    /// The schema a `$ref` names.
    pub fn resolve(&self, reference: &str) -> Result<&'a Value> {
        let Some(name) = reference.strip_prefix(REF_PREFIX) else { bail!("unsupported $ref {reference}") };
        match self.schemas.get(name) {
            Some(schema) => Ok(schema),
            None => bail!("$ref to a missing schema {reference}"),
        }
    }

    fn component(&mut self, name: &str, schema: &Value) -> Result<()> {
        let name = &type_name(name);
        let mut declaration = String::new();
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            doc(description, &mut declaration);
        }
        if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() {
            declaration.push_str(&format!("pub type {name} = {VALUE};\n\n"));
        } else if schema.get("allOf").is_some() || is_object_with_properties(schema) {
            let object = self.object_parts(schema)?;
            self.emit_struct(name, &object, &mut declaration)?;
        } else if let Some(values) = enum_values(schema) {
            emit_enum(name, &values, &mut declaration)?;
        } else {
            let field = self.field_type(schema, name, "")?;
            let rust = if field.nullable { format!("Option<{}>", field.rust) } else { field.rust };
            declaration.push_str(&format!("pub type {name} = {rust};\n\n"));
        }
        self.out.push_str(&declaration);
        Ok(())
    }

    /// Properties, required names and the type of further members, `allOf` parts merged.
    fn object_parts<'s>(&self, schema: &'s Value) -> Result<Object<'s>>
    where
        'a: 's,
    {
        let mut object = Object::default();
        self.merge(schema, &mut object)?;
        Ok(object)
    }

    fn merge<'s>(&self, schema: &'s Value, object: &mut Object<'s>) -> Result<()>
    where
        'a: 's,
    {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            return self.merge(self.resolve(reference)?, object);
        }
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            for part in parts {
                self.merge(part, object)?;
            }
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                object.properties.insert(name.clone(), property);
            }
        }
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            object.required.extend(required.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {}
            Some(additional) => object.additional = Some(additional),
        }
        Ok(())
    }

    fn emit_struct(&mut self, name: &str, object: &Object<'_>, out: &mut String) -> Result<()> {
        let mut fields = String::new();
        let mut all_optional = true;
        // (Rust name, type) of the members that must be present and not null
        let mut required_values = Vec::new();
        let mut other_fields = Vec::new();
        for (wire, property) in &object.properties {
            let field = self.field_type(property, name, wire)?;
            let required = object.required.contains(wire.as_str());
            let field_nullable = field.nullable;
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                doc(description, &mut fields);
            }
            let rust_name = snake(wire);
            if rust_name.trim_start_matches("r#") != wire.as_str() {
                fields.push_str(&format!("#[serde(rename = \"{wire}\")]\n"));
            }
            let rust = match (required, field.nullable) {
                (true, false) => {
                    all_optional = false;
                    required_values.push((rust_name.clone(), field.rust.clone()));
                    field.rust
                }
                (true, true) => format!("Option<{}>", field.rust),
                (false, false) => {
                    fields.push_str("#[serde(default, skip_serializing_if = \"Option::is_none\")]\n");
                    format!("Option<{}>", field.rust)
                }
                (false, true) => {
                    fields.push_str(
                        "#[serde(default, skip_serializing_if = \"Option::is_none\", with = \"crate::double_option\")]\n",
                    );
                    format!("Option<Option<{}>>", field.rust)
                }
            };
            if !required || field_nullable {
                other_fields.push(rust_name.clone());
            }
            fields.push_str(&format!("pub {rust_name}: {rust},\n"));
        }
        if let Some(additional) = object.additional {
            let map = self.map_type(additional, name, "extra")?;
            fields.push_str("/// Members beyond the named ones.\n#[serde(flatten)]\n");
            fields.push_str(&format!("pub extra: {map},\n"));
            other_fields.push("extra".to_owned());
        }
        let default = if all_optional { ", Default" } else { "" };
        out.push_str(&format!(
            "#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize{default})]\npub struct {name} {{\n{fields}}}\n\n"
        ));
        if !all_optional && required_values.len() <= MAX_CONSTRUCTOR_ARGUMENTS {
            out.push_str(&constructor(name, &required_values, &other_fields));
        }
        Ok(())
    }

    /// The map type of `additionalProperties` (`true` or a schema).
    fn map_type(&mut self, additional: &Value, parent: &str, field: &str) -> Result<String> {
        if additional.is_boolean() {
            return Ok(OBJECT.to_owned());
        }
        let value = self.field_type(additional, parent, field)?;
        let rust = if value.nullable { format!("Option<{}>", value.rust) } else { value.rust };
        Ok(format!("std::collections::BTreeMap<String, {rust}>"))
    }

    /// The Rust type of a schema found at `parent.field` (names inline enumerations and objects).
    pub fn field_type(&mut self, schema: &Value, parent: &str, field: &str) -> Result<FieldType> {
        let plain = |rust: &str| FieldType { rust: rust.to_owned(), nullable: false };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let Some(name) = reference.strip_prefix(REF_PREFIX) else { bail!("unsupported $ref {reference}") };
            self.resolve(reference)?;
            return Ok(plain(&type_name(name)));
        }
        if let Some(alternatives) = schema.get("oneOf").and_then(Value::as_array) {
            if let [only, null] = alternatives.as_slice()
                && is_null(null)
            {
                let inner = self.field_type(only, parent, field)?;
                return Ok(FieldType { rust: inner.rust, nullable: true });
            }
            return Ok(plain(VALUE));
        }
        if schema.get("anyOf").is_some() || schema.get("allOf").is_some() {
            return Ok(plain(VALUE));
        }
        let (kind, nullable) = match schema.get("type") {
            Some(Value::String(kind)) => (Some(kind.as_str()), false),
            Some(Value::Array(kinds)) => {
                let non_null: Vec<&str> =
                    kinds.iter().filter_map(Value::as_str).filter(|kind| *kind != "null").collect();
                let nullable = non_null.len() < kinds.len();
                match non_null.as_slice() {
                    [kind] => (Some(*kind), nullable),
                    _ => return Ok(FieldType { rust: VALUE.to_owned(), nullable }),
                }
            }
            _ => (None, false),
        };
        let rust = match kind {
            Some("string") => match enum_values(schema) {
                Some(values) => self.inline_enum(values, parent, field)?,
                None => "String".to_owned(),
            },
            Some("integer") => integer(schema).to_owned(),
            Some("number") => "f64".to_owned(),
            Some("boolean") => "bool".to_owned(),
            Some("array") => {
                let items = match schema.get("items") {
                    Some(items) => self.field_type(items, parent, field)?,
                    None => plain(VALUE),
                };
                let item = if items.nullable { format!("Option<{}>", items.rust) } else { items.rust };
                format!("Vec<{item}>")
            }
            Some("object") if is_object_with_properties(schema) => {
                let name = self.fresh_name(parent, field)?;
                let object = self.object_parts(schema)?;
                let mut declaration = String::new();
                self.emit_struct(&name, &object, &mut declaration)?;
                self.out.push_str(&declaration);
                name
            }
            Some("object") => match schema.get("additionalProperties") {
                Some(additional) if additional.is_object() => self.map_type(additional, parent, field)?,
                _ => OBJECT.to_owned(),
            },
            _ => VALUE.to_owned(),
        };
        Ok(FieldType { rust, nullable })
    }

    /// One enum per set of values: the field's name when free, else prefixed with its parent's.
    fn inline_enum(&mut self, values: Vec<String>, parent: &str, field: &str) -> Result<String> {
        if let Some(name) = self.inline_enums.get(&values) {
            return Ok(name.clone());
        }
        let name = self.fresh_name(parent, field)?;
        let mut declaration = String::new();
        emit_enum(&name, &values, &mut declaration)?;
        self.out.push_str(&declaration);
        self.inline_enums.insert(values, name.clone());
        Ok(name)
    }

    /// `AuthType` for `authType`, or `ListRisksSort` when `Sort` is taken.
    fn fresh_name(&mut self, parent: &str, field: &str) -> Result<String> {
        let short = pascal(field);
        for candidate in [short.clone(), format!("{parent}{short}")] {
            if !candidate.is_empty() && self.taken.insert(candidate.clone()) {
                return Ok(candidate);
            }
        }
        bail!("no free type name for {parent}.{field}")
    }

    /// Reserves a name the operations declare themselves (query structs).
    pub fn reserve(&mut self, name: &str) -> Result<()> {
        if !self.taken.insert(name.to_owned()) {
            bail!("type name {name} is declared twice");
        }
        Ok(())
    }
}

/// Clippy's `too_many_arguments` limit: a type with more required members has no `new`.
const MAX_CONSTRUCTOR_ARGUMENTS: usize = 7;

/// `new` with the members that must have a value, in the struct's (alphabetical) order; the
/// others absent (`None`), `null` (`None` too) or empty (further members).
fn constructor(name: &str, required: &[(String, String)], others: &[String]) -> String {
    let arguments: Vec<String> = required.iter().map(|(field, rust)| format!("{field}: {rust}")).collect();
    let documented: Vec<String> =
        required.iter().map(|(field, _)| format!("`{}`", field.trim_start_matches("r#"))).collect();
    let mut values: Vec<String> = required.iter().map(|(field, _)| field.clone()).collect();
    values.extend(
        others.iter().map(|field| {
            if field == "extra" { "extra: Default::default()".to_owned() } else { format!("{field}: None") }
        }),
    );
    format!(
        "impl {name} {{\n/// A value with {}; every other member absent or `null`.\n\
         pub fn new({}) -> Self {{\nSelf {{ {} }}\n}}\n}}\n\n",
        documented.join(", "),
        arguments.join(", "),
        values.join(", "),
    )
}

#[derive(Default)]
struct Object<'a> {
    properties: BTreeMap<String, &'a Value>,
    required: BTreeSet<String>,
    additional: Option<&'a Value>,
}

fn is_object_with_properties(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_some_and(|properties| !properties.is_empty())
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

fn enum_values(schema: &Value) -> Option<Vec<String>> {
    let values = schema.get("enum")?.as_array()?;
    Some(values.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// `int32`/`int64`, unsigned when the schema's minimum is not negative.
fn integer(schema: &Value) -> &'static str {
    let unsigned = schema.get("minimum").and_then(Value::as_f64).is_some_and(|minimum| minimum >= 0.0);
    match (schema.get("format").and_then(Value::as_str), unsigned) {
        (Some("int32"), true) => "u32",
        (Some("int32"), false) => "i32",
        (_, true) => "u64",
        (_, false) => "i64",
    }
}

fn emit_enum(name: &str, values: &[String], out: &mut String) -> Result<()> {
    let mut variants = String::new();
    let mut seen = BTreeSet::new();
    for value in values {
        let variant = pascal(value);
        if variant.is_empty() || !seen.insert(variant.clone()) {
            bail!("enum {name}: the value {value:?} has no distinct variant name");
        }
        variants.push_str(&format!("#[serde(rename = \"{value}\")]\n{variant},\n"));
    }
    out.push_str(&format!(
        "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]\npub enum {name} {{\n{variants}}}\n\n"
    ));
    // The wire text, for query strings and messages.
    let arms: String = values.iter().map(|value| format!("Self::{} => \"{value}\",\n", pascal(value))).collect();
    out.push_str(&format!(
        "impl {name} {{\n/// The value as it is on the wire.\npub fn as_str(self) -> &'static str {{\nmatch self {{\n{arms}}}\n}}\n}}\n\n"
    ));
    Ok(())
}

/// The Rust name of a component schema: utoipa names a generic schema's instances
/// `BulkResult_RiskDto`, which Rust wants as `BulkResultRiskDto`.
fn type_name(schema: &str) -> String {
    schema.replace('_', "")
}
