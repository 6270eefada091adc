/*
 * Test-only: the file: scheme for HiveCompactorRunner's MapReduce job.
 *
 * Hadoop's LocalJobRunner calls FileSystem.getLocal(conf), which casts the file: file system to
 * LocalFileSystem; FastLocalFileSystem (a RawLocalFileSystem) fails that cast. This is a
 * LocalFileSystem over FastLocalFileSystem with checksum files turned off (no ".crc" files in the
 * table directory, as with the raw file system the oracle uses elsewhere).
 */
package acidflow.hive;

import java.io.IOException;
import java.net.URI;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;

public class HiveCompactorLocalFileSystem extends LocalFileSystem {
  public HiveCompactorLocalFileSystem() {
    super(new FastLocalFileSystem());
    setWriteChecksum(false);
    setVerifyChecksum(false);
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setWriteChecksum(false);
    setVerifyChecksum(false);
  }
}
