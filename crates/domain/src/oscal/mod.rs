//! NIST's OSCAL (Open Security Controls Assessment Language), the exchange format of the
//! compliance field: what this service reads of it (catalogs) and writes (assessment results, the
//! control library as a component-definition).

pub mod assessment_results;
pub mod catalog;
pub mod component_definition;
