//! NIST's OSCAL (Open Security Controls Assessment Language), the exchange format of the
//! compliance field: what this service reads of it.

pub mod catalog;
