// Package atomicfile replaces files so that no reader ever sees a torn
// one: a reader opens either the complete old content or the complete
// new content.
//
// WriteFile writes a temporary file in the same directory, syncs it to
// disk, renames it over the target (rename within one directory is atomic
// on POSIX file systems) and then syncs the directory so that the rename
// itself survives a power loss.
//
// What can go wrong: when any step fails the temporary file is removed
// and the old file is left as it was; but if the process is killed
// between creating and renaming the temporary file, a file named
// name + ".tmp-" + suffix stays behind. Callers that scan directories
// should ignore such names (IsTemp tells them apart) and may remove them.
// Directory sync is best effort: some file systems cannot open or sync a
// directory, and the error is then ignored. Atomicity holds only when the
// temporary file and the target are on the same file system, which is why
// the temporary file is created beside the target and not in os.TempDir.
package atomicfile
