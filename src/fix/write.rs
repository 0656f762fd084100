//! Writing a fixed file without ever leaving it half-written: the new text goes to a
//! temporary file in the same directory, which then replaces the original in one rename,
//! with the original's permissions. A read-only file is refused, not overwritten. A
//! symbolic link is followed: the file it points to is replaced and the link stays.

use std::io::{self, Write};
use std::path::Path;

pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // Renaming over a link would replace the link itself and leave its target unfixed.
    let resolved = std::fs::canonicalize(path)?;
    let path = resolved.as_path();
    let metadata = std::fs::metadata(path)?;
    if metadata.permissions().readonly() {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"));
    }
    let directory = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temporary = tempfile::Builder::new().prefix(".oomlint-").suffix(".tmp").tempfile_in(directory)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    std::fs::set_permissions(temporary.path(), metadata.permissions())?;
    // On failure the temporary file is removed and the original is untouched.
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}
