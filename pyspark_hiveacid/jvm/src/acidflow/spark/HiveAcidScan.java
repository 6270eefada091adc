package acidflow.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;

/**
 * One planned read: the snapshot (and its lease) taken once in {@code build()}, one input
 * partition per (table partition, bucket) with exactly the files that bucket needs.
 */
final class HiveAcidScan implements Scan, Batch {
  static final String ROW_ID = "row__id";
  private static final String BATCH_SIZE_CONF = "spark.sql.orc.columnarReaderBatchSize";
  /** Hive's hive.transactional.events.mem default: above it a task streams the events (StreamedDeletes). */
  private static final long DELETE_EVENTS_IN_MEMORY = 10_000_000L;
  static final String DELETE_EVENTS_CONF = "spark.acidflow.deleteEventsInMemory";

  private final StructType output;
  private final HiveAcidProvider.TableColumns columns;
  private final CaseInsensitiveStringMap options;
  private final JsonNode plan;

  HiveAcidScan(
      StructType output,
      HiveAcidProvider.TableColumns columns,
      CaseInsensitiveStringMap options,
      JsonNode plan) {
    this.output = output;
    this.columns = columns;
    this.options = options;
    this.plan = plan;
  }

  @Override
  public StructType readSchema() {
    return output;
  }

  @Override
  public String description() {
    return "hiveacid " + plan.path("write_ids").asText() + " (" + plan.path("partitions").size() + " buckets)";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  private static int indexOf(List<String> names, String name) {
    for (int i = 0; i < names.size(); i++) {
      if (names.get(i).equalsIgnoreCase(name)) {
        return i;
      }
    }
    return -1;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    JsonNode lease = plan.get("lease_id");
    if (lease != null && !lease.isNull() && plan.path("renew").asBoolean(false)) {
      LeaseKeeper.track(
          SparkSession.active().sparkContext(),
          lease.asLong(),
          plan.path("lease_ttl").asDouble(600.0),
          options.asCaseSensitiveMap());
    }
    StructType partitionSchema = new StructType();
    for (String name : columns.partitionColumns()) {
      partitionSchema = partitionSchema.add(columns.schema().apply(name));
    }
    List<InputPartition> out = new ArrayList<>();
    for (JsonNode p : plan.get("partitions")) {
      JsonNode files = p.get("files");
      String[] paths = new String[files.size()];
      byte[] kinds = new byte[files.size()];
      long[] lengths = new long[files.size()];
      for (int i = 0; i < files.size(); i++) {
        JsonNode f = files.get(i);
        paths[i] = f.get("path").asText();
        lengths[i] = f.get("length").asLong();
        kinds[i] =
            switch (f.get("kind").asText()) {
              case "original" -> HiveAcidInputPartition.ORIGINAL;
              case "base" -> HiveAcidInputPartition.BASE;
              default -> HiveAcidInputPartition.DELTA;
            };
      }
      JsonNode deletes = p.get("deletes");
      String[] deletePaths = new String[deletes.size()];
      long[] deleteLengths = new long[deletes.size()];
      for (int i = 0; i < deletes.size(); i++) {
        deletePaths[i] = deletes.get(i).get("path").asText();
        deleteLengths[i] = deletes.get(i).get("length").asLong();
      }
      out.add(
          new HiveAcidInputPartition(
              p.get("location").asText(),
              p.get("bucket").asInt(),
              paths,
              kinds,
              lengths,
              deletePaths,
              deleteLengths,
              internalRow(partitionSchema, p.get("values"))));
    }
    return out.toArray(new InputPartition[0]);
  }

  /** The planner's partition values (Spark's internal form, as JSON) as an InternalRow. */
  static InternalRow internalRow(StructType schema, JsonNode values) {
    StructField[] fields = schema.fields();
    Object[] row = new Object[fields.length];
    for (int i = 0; i < fields.length; i++) {
      JsonNode v = values.get(i);
      row[i] = v == null || v.isNull() ? null : internal(fields[i].dataType(), v);
    }
    return new GenericInternalRow(row);
  }

  private static Object internal(DataType type, JsonNode v) {
    if (type instanceof StringType) {
      return UTF8String.fromString(v.asText());
    } else if (type instanceof IntegerType || type instanceof DateType) {
      return v.asInt();
    } else if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
      return v.asLong();
    } else if (type instanceof ShortType) {
      return (short) v.asInt();
    } else if (type instanceof ByteType) {
      return (byte) v.asInt();
    } else if (type instanceof BooleanType) {
      return v.asBoolean();
    } else if (type instanceof DoubleType) {
      return v.asDouble();
    } else if (type instanceof FloatType) {
      return (float) v.asDouble();
    } else if (type instanceof DecimalType d) {
      return Decimal.apply(new java.math.BigDecimal(v.asText()), d.precision(), d.scale());
    } else if (type instanceof BinaryType) {
      return Base64.getDecoder().decode(v.asText());
    }
    throw new HiveAcidException("hiveacid: partition column type " + type.simpleString() + " is not supported");
  }

  private ReadSpec factory;

  /** Built once per scan (Spark asks more than once; each build would broadcast the Hadoop conf). */
  @Override
  public synchronized PartitionReaderFactory createReaderFactory() {
    if (factory == null) {
      factory = buildFactory();
    }
    return factory;
  }

  private ReadSpec buildFactory() {
    StructField[] fields = output.fields();
    byte[] kinds = new byte[fields.length];
    int[] indexes = new int[fields.length];
    for (int k = 0; k < fields.length; k++) {
      String name = fields[k].name().toLowerCase(Locale.ROOT);
      if (name.equals(ROW_ID)) {
        kinds[k] = ReadSpec.ROW_ID;
      } else if (indexOf(columns.partitionColumns(), name) >= 0) {
        kinds[k] = ReadSpec.PARTITION;
        indexes[k] = indexOf(columns.partitionColumns(), name);
      } else {
        kinds[k] = ReadSpec.DATA;
        indexes[k] = indexOf(columns.dataColumns(), name);
        if (indexes[k] < 0) {
          throw new HiveAcidException("hiveacid: no column " + name + " in " + columns.dataColumns());
        }
      }
    }
    SparkSession spark = SparkSession.active();
    SparkContext sc = spark.sparkContext();
    int batchSize = Integer.parseInt(spark.conf().get(BATCH_SIZE_CONF, "4096"));
    long deleteEventsInMemory =
        Long.parseLong(spark.conf().get(DELETE_EVENTS_CONF, Long.toString(DELETE_EVENTS_IN_MEMORY)));
    return new ReadSpec(
        output,
        kinds,
        indexes,
        plan.get("row_type").asText(),
        plan.get("write_ids").asText(),
        batchSize,
        deleteEventsInMemory,
        SerializableConfiguration.broadcast(sc, spark.sessionState().newHadoopConf()));
  }
}
