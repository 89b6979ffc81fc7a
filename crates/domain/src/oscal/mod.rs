//! NIST's OSCAL (Open Security Controls Assessment Language), the exchange format of the
//! compliance field: what this service reads of it (catalogs) and writes (assessment results).

pub mod assessment_results;
pub mod catalog;
