//! The Python grammar's field ids, by name: looking a field up by its name searches the
//! grammar's field names with string compares on every call, and rules ask for fields
//! of tens of thousands of nodes per file. A test checks each id against the grammar.

use std::num::NonZeroU16;

pub const ALIAS: u16 = 1;
pub const ARGUMENT: u16 = 3;
pub const ARGUMENTS: u16 = 4;
pub const ATTRIBUTE: u16 = 5;
pub const BODY: u16 = 6;
pub const CONDITION: u16 = 9;
pub const CONSEQUENCE: u16 = 10;
pub const DEFINITION: u16 = 11;
pub const FUNCTION: u16 = 14;
pub const LEFT: u16 = 17;
pub const MODULE_NAME: u16 = 18;
pub const NAME: u16 = 19;
pub const OBJECT: u16 = 20;
pub const PARAMETERS: u16 = 23;
pub const RIGHT: u16 = 25;
pub const SUBSCRIPT: u16 = 27;
pub const SUPERCLASSES: u16 = 28;
pub const VALUE: u16 = 32;

/// A field id as `Node::children_by_field_id` takes it.
pub const fn id(field: u16) -> NonZeroU16 {
    match NonZeroU16::new(field) {
        Some(id) => id,
        None => panic!("field ids start at 1"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_id_is_the_grammars_id_of_its_name() {
        let language = crate::engine::language();
        for (name, id) in [
            ("alias", super::ALIAS),
            ("argument", super::ARGUMENT),
            ("arguments", super::ARGUMENTS),
            ("attribute", super::ATTRIBUTE),
            ("body", super::BODY),
            ("condition", super::CONDITION),
            ("consequence", super::CONSEQUENCE),
            ("definition", super::DEFINITION),
            ("function", super::FUNCTION),
            ("left", super::LEFT),
            ("module_name", super::MODULE_NAME),
            ("name", super::NAME),
            ("object", super::OBJECT),
            ("parameters", super::PARAMETERS),
            ("right", super::RIGHT),
            ("subscript", super::SUBSCRIPT),
            ("superclasses", super::SUPERCLASSES),
            ("value", super::VALUE),
        ] {
            assert_eq!(language.field_id_for_name(name).map(|i| i.get()), Some(id), "{name}");
        }
    }
}
