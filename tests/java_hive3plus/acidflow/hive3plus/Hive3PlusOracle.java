/*
 * Test-only bridge from acidflow's differential tests to Apache Hive 3.1.3's and 4.0.1's own
 * classes: the code both versions share. Compiled at test time (tests/fixtures/hive_oracles.py)
 * twice, once against each version's class path (hive-exec <v> core and its dependencies from Maven
 * Central, tests/fixtures/hive31/pom.xml and tests/fixtures/hive4/pom.xml), next to that version's
 * own file (tests/java_hive31/acidflow/hive31/Hive31Oracle.java,
 * tests/java_hive4/acidflow/hive4/Hive4Oracle.java), which holds only what differs: the
 * AcidUtils.getAcidState call and its answer's types, and Hive 4's visibility txn (the "_v<txn>"
 * suffix) of OrcRecordUpdater's options. Every call names the same Hive classes and methods in
 * both versions (OrcRecordUpdater, OrcInputFormat's row-mode ACID reader,
 * VectorizedOrcAcidRowBatchReader); every rule being tested lives in them. Answers are JSON strings
 * so that one py4j round trip answers a whole batch.
 */
package acidflow.hive3plus;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.function.UnaryOperator;

import static acidflow.hive.OracleJson.appendList;
import static acidflow.hive.OracleJson.quote;
import static acidflow.hive.OracleJson.relative;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.ValidReaderWriteIdList;
import org.apache.hadoop.hive.common.ValidTxnList;
import org.apache.hadoop.hive.common.ValidWriteIdList;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.api.hive_metastoreConstants;
import org.apache.hadoop.hive.ql.exec.Utilities;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatchCtx;
import org.apache.hadoop.hive.ql.io.AcidInputFormat;
import org.apache.hadoop.hive.ql.io.AcidOutputFormat;
import org.apache.hadoop.hive.ql.io.AcidUtils;
import org.apache.hadoop.hive.ql.io.IOConstants;
import org.apache.hadoop.hive.ql.io.RecordIdentifier;
import org.apache.hadoop.hive.ql.io.RecordUpdater;
import org.apache.hadoop.hive.ql.io.orc.OrcInputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcSplit;
import org.apache.hadoop.hive.ql.io.orc.OrcStruct;
import org.apache.hadoop.hive.ql.io.orc.VectorizedOrcAcidRowBatchReader;
import org.apache.hadoop.hive.ql.metadata.VirtualColumn;
import org.apache.hadoop.hive.ql.plan.MapWork;
import org.apache.hadoop.hive.serde2.SerDeUtils;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoFactory;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.hive.shims.HadoopShims.HdfsFileStatusWithId;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

public final class Hive3PlusOracle {
  public static final String COLUMNS = "id,name,salary";
  public static final String COLUMN_TYPES = "int:string:int";
  private static final String NULL = "\\N";

  private Hive3PlusOracle() {
  }

  /** A Configuration whose file: scheme lists without forking (FastLocalFileSystem), ZLIB as HiveConf. */
  public static Configuration newConf() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", "acidflow.hive.FastLocalFileSystem");
    conf.setBoolean("fs.file.impl.disable.cache", true);
    conf.set("orc.compress", "ZLIB");
    conf.set("hive.exec.orc.default.compress", "ZLIB");
    return conf;
  }

  // -- AcidUtils.getAcidState ----------------------------------------------------------------------

  /** One version's answer of AcidUtils.getAcidState (Hive's orders kept); obsolete and aborted as paths. */
  public record AcidState(Path base, List<AcidUtils.ParsedDelta> deltas, List<Path> obsolete, List<Path> aborted,
      List<HdfsFileStatusWithId> originalFiles) {
  }

  /** One version's AcidUtils.getAcidState call (its signature and answer types differ from 3.1 to 4). */
  @FunctionalInterface
  public interface AcidStateCall {
    AcidState call(FileSystem fs, Path dir, Configuration conf, ValidReaderWriteIdList writeIds)
        throws IOException;
  }

  /**
   * getAcidState for many directories: {@code requests} holds one "dir TAB writeIds TAB validTxns"
   * line per directory; the answer is a JSON array with one object per line.
   */
  public static String acidStates(String requests, AcidStateCall getAcidState) {
    // One Configuration for the batch: building one parses Hadoop's default resources (~50 ms).
    Configuration conf = newConf();
    StringBuilder out = new StringBuilder("[");
    String[] lines = requests.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String[] parts = lines[i].split("\t", -1);
      if (i > 0) {
        out.append(',');
      }
      appendAcidState(out, conf, getAcidState, parts[0], parts[1], parts[2]);
    }
    return out.append(']').toString();
  }

  private static void appendAcidState(StringBuilder out, Configuration conf, AcidStateCall getAcidState,
      String tableDir, String writeIds, String validTxns) {
    try {
      // Set as Hive's drivers set it; Hive 4's getAcidState reads it for "_v<txn>" names, 3.1's does not.
      conf.set(ValidTxnList.VALID_TXNS_KEY, validTxns);
      Path dir = new Path(tableDir);
      FileSystem fs = dir.getFileSystem(conf);
      dir = fs.makeQualified(dir);
      String root = dir.toUri().getPath();
      AcidState state = getAcidState.call(fs, dir, conf, new ValidReaderWriteIdList(writeIds));
      out.append("{\"base\":").append(state.base() == null ? "null" : quote(relative(root, state.base())));
      out.append(",\"deltas\":");
      List<Path> deltas = new ArrayList<>();
      for (AcidUtils.ParsedDelta delta : state.deltas()) {
        deltas.add(delta.getPath());
      }
      appendList(out, relative(root, deltas));
      out.append(",\"obsolete\":");
      appendList(out, relative(root, state.obsolete()));
      out.append(",\"aborted\":");
      appendList(out, relative(root, state.aborted()));
      out.append(",\"original_files\":");
      List<Path> originals = new ArrayList<>();
      for (HdfsFileStatusWithId file : state.originalFiles()) {
        originals.add(file.getFileStatus().getPath());
      }
      appendList(out, relative(root, originals));
      out.append('}');
    } catch (IOException | RuntimeException e) {
      out.append("{\"error\":").append(quote(e.getClass().getName() + ": " + e.getMessage())).append('}');
    }
  }

  // -- OrcRecordUpdater ------------------------------------------------------------------------------

  static StructObjectInspector rowInspector() {
    ObjectInspector recordId = ObjectInspectorFactory.getStandardStructObjectInspector(
        Arrays.asList("writeid", "bucketid", "rowid"),
        Arrays.<ObjectInspector>asList(
            PrimitiveObjectInspectorFactory.javaLongObjectInspector,
            PrimitiveObjectInspectorFactory.javaIntObjectInspector,
            PrimitiveObjectInspectorFactory.javaLongObjectInspector));
    return ObjectInspectorFactory.getStandardStructObjectInspector(
        Arrays.asList("ROW__ID", "id", "name", "salary"),
        Arrays.<ObjectInspector>asList(
            recordId,
            PrimitiveObjectInspectorFactory.javaIntObjectInspector,
            PrimitiveObjectInspectorFactory.javaStringObjectInspector,
            PrimitiveObjectInspectorFactory.javaIntObjectInspector));
  }

  private static Integer parseInt(String text) {
    return NULL.equals(text) ? null : Integer.valueOf(text);
  }

  private static String parseString(String text) {
    return NULL.equals(text) ? null : text;
  }

  /**
   * Write one bucket of events through this version's OrcRecordUpdater (split update, the default
   * transactional_properties). Lines: "I TAB writeId TAB id TAB name TAB salary",
   * "U TAB writeId TAB originalWriteId TAB bucketProperty TAB rowId TAB id TAB name TAB salary",
   * "D TAB writeId TAB originalWriteId TAB bucketProperty TAB rowId". {@code statementId} -1 writes
   * names without a statement suffix; {@code versionOptions} adds what only one version has (Hive
   * 4: the visibility txn of "_v%07d" names).
   *
   * @return the files that exist after closing, relative to {@code tableDir} (JSON array)
   */
  public static String writeEvents(String tableDir, String events, long minWriteId, long maxWriteId, int bucket,
      int statementId, boolean writingBase, UnaryOperator<AcidOutputFormat.Options> versionOptions)
      throws IOException {
    Configuration conf = newConf();
    Path root = new Path(tableDir);
    FileSystem fs = root.getFileSystem(conf);
    root = fs.makeQualified(root);
    Properties tableProperties = new Properties();
    tableProperties.setProperty(hive_metastoreConstants.TABLE_IS_TRANSACTIONAL, "true");
    tableProperties.setProperty(hive_metastoreConstants.TABLE_TRANSACTIONAL_PROPERTIES, "default");
    tableProperties.setProperty("columns", COLUMNS);
    tableProperties.setProperty("columns.types", COLUMN_TYPES.replace(',', ':'));
    AcidOutputFormat.Options options = versionOptions.apply(new AcidOutputFormat.Options(conf)
        .filesystem(fs)
        .inspector(rowInspector())
        .tableProperties(tableProperties)
        .writingBase(writingBase)
        .minimumWriteId(minWriteId)
        .maximumWriteId(maxWriteId)
        .bucket(bucket)
        .statementId(statementId)
        .recordIdColumn(0)
        .reporter(Reporter.NULL)
        .finalDestination(root));
    RecordUpdater updater = new OrcOutputFormat().getRecordUpdater(root, options);
    boolean ok = false;
    try {
      for (String line : events.split("\n")) {
        if (line.isEmpty()) {
          continue;
        }
        String[] f = line.split("\t", -1);
        long writeId = Long.parseLong(f[1]);
        switch (f[0]) {
          case "I":
            updater.insert(writeId, Arrays.asList(null, parseInt(f[2]), parseString(f[3]), parseInt(f[4])));
            break;
          case "U":
            updater.update(writeId, Arrays.asList(
                Arrays.asList(Long.parseLong(f[2]), Integer.parseInt(f[3]), Long.parseLong(f[4])),
                parseInt(f[5]), parseString(f[6]), parseInt(f[7])));
            break;
          case "D":
            updater.delete(writeId, Arrays.asList(
                Arrays.asList(Long.parseLong(f[2]), Integer.parseInt(f[3]), Long.parseLong(f[4])),
                null, null, null));
            break;
          default:
            throw new IllegalArgumentException("Unknown event kind " + f[0] + " in line " + line);
        }
      }
      ok = true;
    } finally {
      updater.close(!ok);
    }
    List<String> written = new ArrayList<>();
    for (boolean deleteDelta : new boolean[] {false, true}) {
      if (deleteDelta && writingBase) {
        continue;
      }
      Path file = AcidUtils.createFilename(root, options.clone().writingDeleteDelta(deleteDelta));
      if (fs.exists(file)) {
        written.add(relative(root.toUri().getPath(), file));
      }
    }
    StringBuilder out = new StringBuilder();
    appendList(out, written);
    return out.toString();
  }

  // -- readers ---------------------------------------------------------------------------------------

  static JobConf readerConf(String tableDir, String writeIds, String validTxns, int bucketCount, boolean vectorized) {
    return readerConf(tableDir, writeIds, validTxns, bucketCount, vectorized, COLUMNS, COLUMN_TYPES);
  }

  /** The job of a scan of {@code columns} (comma-separated) of {@code columnTypes} (Hive's type list). */
  static JobConf readerConf(String tableDir, String writeIds, String validTxns, int bucketCount, boolean vectorized,
      String columns, String columnTypes) {
    JobConf job = new JobConf(newConf());
    job.set(hive_metastoreConstants.BUCKET_COUNT, Integer.toString(bucketCount));
    job.set(hive_metastoreConstants.TABLE_IS_TRANSACTIONAL, "true");
    job.set(hive_metastoreConstants.TABLE_TRANSACTIONAL_PROPERTIES, "default");
    job.setBoolean(HiveConf.ConfVars.HIVE_TRANSACTIONAL_TABLE_SCAN.varname, true);
    job.setInt(HiveConf.ConfVars.HIVE_TXN_OPERATIONAL_PROPERTIES.varname,
        AcidUtils.AcidOperationalProperties.getDefault().toInt());
    job.set(IOConstants.SCHEMA_EVOLUTION_COLUMNS, columns);
    job.set(IOConstants.SCHEMA_EVOLUTION_COLUMNS_TYPES, columnTypes);
    job.set("columns", columns);
    job.set("columns.types", columnTypes);
    job.setBoolean(HiveConf.ConfVars.HIVE_VECTORIZATION_ENABLED.varname, vectorized);
    job.set(HiveConf.ConfVars.HIVE_ORC_SPLIT_STRATEGY.varname, "BI");
    job.setBoolean(HiveConf.ConfVars.HIVE_ORC_INCLUDE_FILE_ID_IN_SPLITS.varname, false);
    job.set(ValidWriteIdList.VALID_WRITEIDS_KEY, writeIds);
    job.set(ValidTxnList.VALID_TXNS_KEY, validTxns);
    FileInputFormat.setInputPaths(job, new Path(tableDir));
    return job;
  }

  /**
   * Read a table directory at a snapshot with this version's own readers.
   *
   * @return a JSON array of rows {@code [[writeId, bucketProperty, rowId], id, name, salary]} in
   *     the order Hive returns them (split by split)
   */
  public static String readRows(String tableDir, String writeIds, String validTxns, int bucketCount,
      boolean vectorized) throws IOException {
    JobConf job = readerConf(tableDir, writeIds, validTxns, bucketCount, vectorized);
    VectorizedRowBatchCtx ctx = vectorized ? rowIdBatchContext() : null;
    if (vectorized) {
      // The vectorized scan's MapWork, as Hive's executor registers it before split generation
      // (Utilities.setMapWork; kept in memory, under a plan path that is only a key): Hive 4's
      // BISplitStrategy reads its VectorizedRowBatchCtx to see ROW__ID projected and gives an
      // original file's split the synthetic ROW__ID offset and bucket that the reader needs.
      MapWork work = new MapWork();
      work.setVectorMode(true);
      work.setVectorizedRowBatchCtx(ctx);
      job.set(HiveConf.ConfVars.PLAN.varname,
          new Path(System.getProperty("java.io.tmpdir"), "plan-" + UUID.randomUUID()).toString());
      Utilities.setMapWork(job, work);
    }
    try {
      OrcInputFormat format = new OrcInputFormat();
      InputSplit[] splits = format.getSplits(job, 1);
      StringBuilder out = new StringBuilder("[");
      boolean first = true;
      for (InputSplit split : splits) {
        List<String> rows =
            vectorized ? readVectorized((OrcSplit) split, job, ctx) : readRowMode(format, split, job);
        for (String row : rows) {
          if (!first) {
            out.append(',');
          }
          first = false;
          out.append(row);
        }
      }
      return out.append(']').toString();
    } finally {
      if (vectorized) {
        Utilities.clearWorkMapForConf(job);
      }
    }
  }

  /**
   * Read a table of any columns (nested types too) with this version's row-mode ACID reader
   * (OrcInputFormat.getRecordReader: OrcRawRecordMerger).
   *
   * @param columns the column names, comma-separated
   * @param columnTypes their Hive types, colon-separated ("bigint:struct<city:string,zip:int>"), as
   *     the metastore's columns.types
   * @return a JSON array of rows {@code [[writeId, bucketProperty, rowId], {"column": value, ...}]},
   *     each row's values rendered by Hive's own SerDeUtils.getJSONString, in the order Hive returns
   *     them
   */
  public static String readTypedRows(String tableDir, String writeIds, String validTxns, String columns,
      String columnTypes, int bucketCount) throws IOException {
    JobConf job = readerConf(tableDir, writeIds, validTxns, bucketCount, false, columns, columnTypes);
    List<String> names = Arrays.asList(columns.split(","));
    List<TypeInfo> types = TypeInfoUtils.getTypeInfosFromTypeString(columnTypes);
    ObjectInspector inspector = OrcStruct.createObjectInspector(TypeInfoFactory.getStructTypeInfo(names, types));
    OrcInputFormat format = new OrcInputFormat();
    StringBuilder out = new StringBuilder("[");
    for (InputSplit split : format.getSplits(job, 1)) {
      RecordReader<NullWritable, OrcStruct> reader = format.getRecordReader(split, job, Reporter.NULL);
      try {
        NullWritable key = reader.createKey();
        OrcStruct value = reader.createValue();
        while (reader.next(key, value)) {
          if (out.length() > 1) {
            out.append(',');
          }
          out.append('[').append(rowIdJson(reader)).append(',')
              .append(SerDeUtils.getJSONString(value, inspector)).append(']');
        }
      } finally {
        reader.close();
      }
    }
    return out.append(']').toString();
  }

  private static String rowIdJson(RecordReader<NullWritable, OrcStruct> reader) {
    RecordIdentifier id = reader instanceof AcidInputFormat.AcidRecordReader
        ? ((AcidInputFormat.AcidRecordReader<?, ?>) reader).getRecordIdentifier() : null;
    return id == null ? "null" : "[" + id.getWriteId() + "," + id.getBucketProperty() + "," + id.getRowId() + "]";
  }

  /** The batch context of a scan of id, name, salary with ROW__ID projected (as an UPDATE's scan). */
  private static VectorizedRowBatchCtx rowIdBatchContext() {
    return new VectorizedRowBatchCtx(
        new String[] {"id", "name", "salary", VirtualColumn.ROWID.getName()},
        new TypeInfo[] {TypeInfoFactory.intTypeInfo, TypeInfoFactory.stringTypeInfo, TypeInfoFactory.intTypeInfo,
            VirtualColumn.ROWID.getTypeInfo()},
        null, new int[] {0, 1, 2}, 0, 1, new VirtualColumn[] {VirtualColumn.ROWID}, new String[0], null);
  }

  private static List<String> readRowMode(OrcInputFormat format, InputSplit split, JobConf job)
      throws IOException {
    List<String> rows = new ArrayList<>();
    StructObjectInspector inspector = (StructObjectInspector) OrcStruct.createObjectInspector(
        TypeInfoUtils.getTypeInfoFromTypeString("struct<id:int,name:string,salary:int>"));
    List<? extends StructField> fields = inspector.getAllStructFieldRefs();
    RecordReader<NullWritable, OrcStruct> reader = format.getRecordReader(split, job, Reporter.NULL);
    try {
      NullWritable key = reader.createKey();
      OrcStruct value = reader.createValue();
      while (reader.next(key, value)) {
        StringBuilder row = new StringBuilder("[").append(rowIdJson(reader));
        row.append(',').append(intJson(inspector.getStructFieldData(value, fields.get(0))));
        Object name = inspector.getStructFieldData(value, fields.get(1));
        row.append(',').append(name == null ? "null" : quote(name.toString()));
        row.append(',').append(intJson(inspector.getStructFieldData(value, fields.get(2)))).append(']');
        rows.add(row.toString());
      }
    } finally {
      reader.close();
    }
    return rows;
  }

  private static String intJson(Object writable) {
    return writable == null ? "null" : Integer.toString(((IntWritable) writable).get());
  }

  /** The vectorized reader with ROW__ID projected (as an UPDATE's scan asks for it). */
  private static List<String> readVectorized(OrcSplit split, JobConf job, VectorizedRowBatchCtx ctx)
      throws IOException {
    List<String> rows = new ArrayList<>();
    VectorizedOrcAcidRowBatchReader reader =
        org.apache.hadoop.hive.ql.io.orc.VectorizedAcidReaders.open(split, job, ctx);
    try {
      VectorizedRowBatch batch = ctx.createVectorizedRowBatch();
      while (reader.next(NullWritable.get(), batch)) {
        StructColumnVector rowIds = (StructColumnVector) batch.cols[3];
        for (int i = 0; i < batch.size; i++) {
          int index = batch.selectedInUse ? batch.selected[i] : i;
          StringBuilder row = new StringBuilder("[[");
          row.append(longAt(rowIds.fields[0], index)).append(',').append(longAt(rowIds.fields[1], index))
              .append(',').append(longAt(rowIds.fields[2], index)).append(']');
          row.append(',').append(longAt(batch.cols[0], index));
          row.append(',').append(stringAt(batch.cols[1], index));
          row.append(',').append(longAt(batch.cols[2], index)).append(']');
          rows.add(row.toString());
        }
      }
    } finally {
      reader.close();
    }
    return rows;
  }

  private static String longAt(ColumnVector column, int index) {
    int at = column.isRepeating ? 0 : index;
    if (!column.noNulls && column.isNull[at]) {
      return "null";
    }
    return Long.toString(((LongColumnVector) column).vector[at]);
  }

  private static String stringAt(ColumnVector column, int index) {
    int at = column.isRepeating ? 0 : index;
    if (!column.noNulls && column.isNull[at]) {
      return "null";
    }
    BytesColumnVector bytes = (BytesColumnVector) column;
    Text text = new Text();
    text.set(bytes.vector[at], bytes.start[at], bytes.length[at]);
    return quote(text.toString());
  }
}
