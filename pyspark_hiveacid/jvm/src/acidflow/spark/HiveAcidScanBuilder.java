package acidflow.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Column pruning (only the requested row fields are decoded, plus the ACID key) and partition
 * pruning (filters on partition columns go to the planner, which drops partitions where a filter
 * is not true). Every filter is also given back to Spark, which applies it after the scan.
 */
final class HiveAcidScanBuilder
    implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters {
  private final StructType tableSchema;
  private final CaseInsensitiveStringMap options;
  private final HiveAcidProvider.TableColumns columns;
  private StructType required;
  private Filter[] pushed = new Filter[0];
  private final List<JsonNode> pushedJson = new ArrayList<>();

  HiveAcidScanBuilder(
      StructType tableSchema, HiveAcidProvider.TableColumns columns, CaseInsensitiveStringMap options) {
    this.tableSchema = tableSchema;
    this.options = options;
    this.columns = columns;
    this.required = tableSchema;
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    List<Filter> kept = new ArrayList<>();
    for (Filter f : filters) {
      JsonNode json = toJson(f);
      if (json != null) {
        kept.add(f);
        pushedJson.add(json);
      }
    }
    pushed = kept.toArray(new Filter[0]);
    return filters;
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  private boolean isPartitionColumn(String name) {
    for (String p : columns.partitionColumns()) {
      if (p.equalsIgnoreCase(name)) {
        return true;
      }
    }
    return false;
  }

  /** A filter on one partition column as the planner's JSON, or null (it cannot prune). */
  private JsonNode toJson(Filter f) {
    ObjectNode node = Planner.JSON.createObjectNode();
    if (f instanceof Not not) {
      JsonNode child = toJson(not.child());
      if (child == null) {
        return null;
      }
      node.put("op", "Not");
      node.set("child", child);
      return node;
    }
    String column;
    Object value = null;
    Object[] values = null;
    if (f instanceof EqualTo x) {
      column = x.attribute();
      value = x.value();
    } else if (f instanceof EqualNullSafe x) {
      column = x.attribute();
      value = x.value();
    } else if (f instanceof GreaterThan x) {
      column = x.attribute();
      value = x.value();
    } else if (f instanceof GreaterThanOrEqual x) {
      column = x.attribute();
      value = x.value();
    } else if (f instanceof LessThan x) {
      column = x.attribute();
      value = x.value();
    } else if (f instanceof LessThanOrEqual x) {
      column = x.attribute();
      value = x.value();
    } else if (f instanceof In x) {
      column = x.attribute();
      values = x.values();
    } else if (f instanceof IsNull x) {
      column = x.attribute();
    } else if (f instanceof IsNotNull x) {
      column = x.attribute();
    } else {
      return null;
    }
    if (!isPartitionColumn(column)) {
      return null;
    }
    node.put("op", f.getClass().getSimpleName());
    node.put("column", column.toLowerCase(Locale.ROOT));
    if (values != null) {
      ArrayNode array = node.putArray("values");
      for (Object v : values) {
        array.add(Planner.JSON.valueToTree(plain(v)));
      }
    } else if (!(f instanceof IsNull) && !(f instanceof IsNotNull)) {
      node.set("value", Planner.JSON.valueToTree(plain(value)));
    }
    return node;
  }

  /** Spark's external filter values as JSON: dates as "YYYY-MM-DD", timestamps and decimals as text. */
  private static Object plain(Object v) {
    if (v == null || v instanceof String || v instanceof Boolean || v instanceof Number && !(v instanceof java.math.BigDecimal)) {
      return v;
    }
    if (v instanceof java.sql.Date d) {
      return d.toLocalDate().toString();
    }
    return v.toString(); // LocalDate, BigDecimal, Timestamp, Instant, LocalDateTime
  }

  /**
   * Spark 4.2 hands a columnar scan's batches straight to Arrow Python UDFs when this is true, and
   * then hangs unless the batches are Arrow vectors (ours are ORC vectors): a query like
   * {@code df.select(my_udf("v"))} never returns. Off, Spark converts our batches to rows first, as
   * it does for its own ORC reader. Set on the session when a hiveacid scan is planned (before the
   * physical plan is chosen); it only affects that experimental shortcut.
   */
  static final String ARROW_UDF_COLUMNAR_INPUT = "spark.sql.execution.arrow.pythonUDF.columnarInput.enabled";

  @Override
  public Scan build() {
    org.apache.spark.sql.RuntimeConfig conf = org.apache.spark.sql.SparkSession.active().conf();
    if (!"false".equalsIgnoreCase(conf.get(ARROW_UDF_COLUMNAR_INPUT, "true"))) {
      conf.set(ARROW_UDF_COLUMNAR_INPUT, "false");
    }
    ObjectNode request = Planner.request("plan", options.asCaseSensitiveMap());
    ArrayNode filters = request.putArray("filters");
    pushedJson.forEach(filters::add);
    JsonNode plan = Planner.get().call(request);
    return new HiveAcidScan(required, columns, options, plan);
  }
}
