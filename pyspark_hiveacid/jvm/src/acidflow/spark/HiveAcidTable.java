package acidflow.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** One Hive ACID table as Spark sees it: reads in the JVM, writes through the Python source. */
final class HiveAcidTable implements SupportsRead, SupportsWrite {
  private final StructType schema;
  private final Transform[] partitioning;
  private final Map<String, String> properties;
  private HiveAcidProvider.TableColumns columns;

  HiveAcidTable(
      StructType schema,
      Transform[] partitioning,
      Map<String, String> properties,
      HiveAcidProvider.TableColumns columns) {
    this.schema = schema;
    this.partitioning = partitioning;
    this.properties = properties;
    this.columns = columns;
  }

  @Override
  public String name() {
    return HiveAcidProvider.NAME;
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    // What the Python source's table offers for writes (append; overwrite = truncate + append).
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    if (columns == null) { // a user schema: Spark did not ask for one
      columns = HiveAcidProvider.tableColumns(options.asCaseSensitiveMap());
    }
    return new HiveAcidScanBuilder(schema, columns, options);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    SupportsWrite python =
        (SupportsWrite) HiveAcidProvider.python().getTable(schema, partitioning, properties);
    return python.newWriteBuilder(info);
  }
}
