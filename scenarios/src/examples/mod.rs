//! Controllers drydock did not ship with, run by the same simulator: proof that the framework
//! tests user-written reconcilers too.

pub mod rdd_namespaces;
