package acidflow.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code format("hiveacid")} with acidflow's jar on the class path: reads in the JVM, everything
 * else through the Python data source of the same name.
 *
 * <pre>
 *   read   schema: the planner (metastore)   ->  HiveAcidTable -> HiveAcidScanBuilder (columns,
 *          partition filters) -> one snapshot and plan -> ReadSpec + AcidPartitionReader per bucket
 *   write  HiveAcidTable.newWriteBuilder -> the Python source's writer (one transaction)
 *   option engine=python                 -> the Python source for everything (its reader too)
 * </pre>
 *
 * Spark asks JVM sources before Python ones for a short name, so this class shadows
 * {@code pyspark_hiveacid.HiveAcidDataSource} and hands it what it does not do itself.
 */
public final class HiveAcidProvider implements TableProvider, DataSourceRegister {
  static final String NAME = "hiveacid";

  @Override
  public String shortName() {
    return NAME;
  }

  static boolean usesPython(Map<String, String> options) {
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().equalsIgnoreCase("engine")) {
        return e.getValue().trim().equalsIgnoreCase("python");
      }
    }
    return false;
  }

  static PythonDataSourceV2 python() {
    PythonDataSourceV2 source = new PythonDataSourceV2();
    source.setShortName(NAME);
    return source;
  }

  /** The columns the last inferSchema found (Spark calls getTable next, on this instance). */
  private TableColumns inferred;

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    if (usesPython(options)) {
      return python().inferSchema(options);
    }
    JsonNode response = Planner.get().call(Planner.request("schema", options));
    inferred = columnsOf(response);
    return (StructType) DataType.fromJson(response.get("schema").toString());
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    if (usesPython(properties)) {
      return python().getTable(schema, partitioning, properties);
    }
    return new HiveAcidTable(schema, partitioning, properties, inferred);
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true; // .schema(...) names a subset of the columns; a write passes the DataFrame's
  }

  /** The whole table's columns and their roles, from the metastore (through the planner). */
  static TableColumns tableColumns(Map<String, String> options) {
    return columnsOf(Planner.get().call(Planner.request("schema", options)));
  }

  private static TableColumns columnsOf(JsonNode response) {
    StructType schema = (StructType) DataType.fromJson(response.get("table_schema").toString());
    return new TableColumns(schema, names(response.get("partition_columns")), names(response.get("data_columns")));
  }

  private static List<String> names(JsonNode array) {
    List<String> out = new ArrayList<>();
    for (JsonNode n : array) {
      out.add(n.asText());
    }
    return out;
  }

  /** The table's full schema (data columns, then partition columns) and which column is which. */
  record TableColumns(StructType schema, List<String> partitionColumns, List<String> dataColumns) {}
}
