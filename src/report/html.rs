//! `report.html`: placeholder.

mod charts;
