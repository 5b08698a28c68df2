//! The runner on fake programs: shell one-liners declared as entries.
