//! `code_enum!`: one declaration for an enum whose variants stand for
//! fixed numbers on the wire or in a trace, so that the list of variants,
//! their codes and their names are written once and cannot drift apart.
//!
//! ```ignore
//! code_enum! {
//!     /// The steps of a directory removal.
//!     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
//!     pub enum RmdirStep: u32 {
//!         /// Mark the directory as being removed.
//!         Mark = 1 => "mark",
//!         /// Remove the marked directory.
//!         Commit = 2 => "commit",
//!     }
//! }
//! ```
//!
//! It declares the `#[repr]` enum with its attributes and variant docs,
//! and on it `ALL` (every variant, in the order written: code order),
//! `from_code` (`None` for a code no variant has) and `code`; with a
//! `=> "name"` on every variant, also `name`. A leaf: it uses nothing
//! else of the crate, so the wire format and the trace both build on it.

/// Declares a code enum; see the module documentation.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident: $repr:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $name:literal ),+ $(,)?
        }
    ) => {
        $crate::code_enum::code_enum! {
            $(#[$meta])*
            $vis enum $enum: $repr {
                $( $(#[$vmeta])* $variant = $code ),+
            }
        }

        impl $enum {
            /// Its lower-case name.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $enum::$variant => $name, )+
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident: $repr:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr($repr)]
        $vis enum $enum {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $enum {
            /// Every variant, in code order.
            pub const ALL: [$enum; [$(stringify!($variant)),+].len()] = [$($enum::$variant),+];

            /// The variant of code `code`, if any.
            pub const fn from_code(code: $repr) -> Option<$enum> {
                match code {
                    $( $code => Some($enum::$variant), )+
                    _ => None,
                }
            }

            /// Its code.
            pub const fn code(self) -> $repr {
                self as $repr
            }
        }
    };
}

pub(crate) use code_enum;
