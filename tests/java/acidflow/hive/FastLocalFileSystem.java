/*
 * Test-only: the local file system without a fork per listed file.
 *
 * Hadoop's RawLocalFileSystem has no native library here, so every FileStatus it lists loads its
 * permissions by running "ls -ld" in a child process (DeprecatedRawLocalFileStatus), about 100 ms
 * per directory that Hive's AcidUtils lists. This subclass builds FileStatus values from
 * java.io.File instead, and lists children sorted by name as HDFS does. Hive's logic is untouched:
 * only how the local disk is listed changes.
 */
package acidflow.hive;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.Arrays;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class FastLocalFileSystem extends RawLocalFileSystem {
  private static final String USER = System.getProperty("user.name");

  /** "file", as LocalFileSystem answers (Hive 3+ asks it, e.g. BlobStorageUtils); Raw does not. */
  @Override
  public String getScheme() {
    return "file";
  }

  @Override
  public FileStatus[] listStatus(Path path) throws IOException {
    File local = pathToFile(path);
    if (!local.exists()) {
      throw new FileNotFoundException("File " + path + " does not exist");
    }
    if (!local.isDirectory()) {
      return new FileStatus[] {toStatus(local, path)};
    }
    String[] names = local.list();
    if (names == null) {
      throw new IOException("Cannot list " + path);
    }
    Arrays.sort(names);
    FileStatus[] result = new FileStatus[names.length];
    for (int i = 0; i < names.length; i++) {
      result[i] = toStatus(new File(local, names[i]), new Path(path, names[i]));
    }
    return result;
  }

  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    File local = pathToFile(path);
    if (!local.exists()) {
      throw new FileNotFoundException("File " + path + " does not exist");
    }
    return toStatus(local, path);
  }

  private FileStatus toStatus(File file, Path path) {
    boolean isDir = file.isDirectory();
    return new FileStatus(isDir ? 0 : file.length(), isDir, 1, getDefaultBlockSize(path),
        file.lastModified(), 0, isDir ? FsPermission.getDirDefault() : FsPermission.getFileDefault(),
        USER, USER, makeQualified(path));
  }
}
