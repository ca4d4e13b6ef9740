//! Front ends copied in from npm (GraphiQL, Redoc, Leaflet), served from the binary at
//! `/assets/{name}-{version}/{file}` so they work offline and can be cached for good (the
//! version is in the path). Each front end declares its [`Bundle`]; the route table asks them.

/// One vendored package: its name and version (the path's first segment is `{name}-{version}`)
/// and its files as (file, media type, bytes).
pub struct Bundle {
    pub name: &'static str,
    pub version: &'static str,
    pub files: &'static [(&'static str, &'static str, &'static [u8])],
}

impl Bundle {
    /// `file` of the bundle whose path segment is `segment`: (media type, bytes).
    pub fn file(&self, segment: &str, file: &str) -> Option<(&'static str, &'static [u8])> {
        let version = segment.strip_prefix(self.name)?.strip_prefix('-')?;
        if version != self.version {
            return None;
        }
        self.files
            .iter()
            .find(|(name, _, _)| *name == file)
            .map(|(_, media, bytes)| (*media, *bytes))
    }

    /// Where the bundle's files are served: `/assets/{name}-{version}`.
    pub fn path(&self) -> String {
        format!("/assets/{}-{}", self.name, self.version)
    }
}
