//! HTTP: URLs to the stages behind them.
