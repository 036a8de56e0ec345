//! Named catalogs: enums whose variants each have a stable kebab-case name and a one-line
//! description, listed from one table (probes, invariants). A typo in a name is a compile error,
//! and `drydock sim list` prints the table.

/// Declare a catalog enum: `catalog! { pub enum Probe { UncertainCreateAdopted = ("uncertain-create-adopted", "..."), ... } }`.
/// Generates `ALL`, `name()`, `description()`, `from_name()`, `Display` and a `Serialize` that
/// writes the name.
macro_rules! catalog {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = ($text:literal, $description:literal), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every entry, in table order.
            pub const ALL: &'static [$name] = &[$( $name::$variant, )+];

            /// The stable name (kebab-case), as printed and saved.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// What it means, in one line.
            pub const fn description(self) -> &'static str {
                match self {
                    $( $name::$variant => $description, )+
                }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|entry| entry.name() == name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }
    };
}

pub(crate) use catalog;
