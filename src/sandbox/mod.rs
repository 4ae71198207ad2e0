pub mod chain;
pub mod chaingateway;
