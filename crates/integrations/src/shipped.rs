//! The manifests of `providers/`, compiled into the binary.
