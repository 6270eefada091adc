/*
 * Test-only bridge: write ACID event files with Hive 2.3's own OrcRecordUpdater, and read a table
 * directory with Hive 2.3's own ACID readers (row mode and vectorized), for acidflow's tests.
 *
 * The row type is fixed: struct<id:int, name:string, salary:int>. Events and rows travel as text
 * (one event per line, tab-separated, "\N" for null) and JSON, so that one py4j round trip
 * carries a whole batch.
 */
package acidflow.hive;

import java.io.IOException;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.ValidTxnList;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.api.hive_metastoreConstants;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.hadoop.hive.ql.io.AcidInputFormat;
import org.apache.hadoop.hive.ql.io.AcidOutputFormat;
import org.apache.hadoop.hive.ql.io.AcidUtils;
import org.apache.hadoop.hive.ql.io.IOConstants;
import org.apache.hadoop.hive.ql.io.RecordIdentifier;
import org.apache.hadoop.hive.ql.io.RecordUpdater;
import org.apache.hadoop.hive.ql.io.orc.OrcFile;
import org.apache.hadoop.hive.ql.io.orc.OrcInputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcSplit;
import org.apache.hadoop.hive.ql.io.orc.OrcStruct;
import org.apache.hadoop.hive.ql.io.orc.VectorizedOrcAcidRowBatchReader;
import org.apache.hadoop.hive.ql.io.orc.Writer;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;
import org.apache.orc.TypeDescription;

public final class HiveAcidEvents {
  public static final String COLUMNS = "id,name,salary";
  public static final String COLUMN_TYPES = "int,string,int";
  private static final String NULL = "\\N";

  private HiveAcidEvents() {
  }

  /**
   * The inspector of the rows handed to OrcRecordUpdater: the record identifier in column 0
   * (stripped before writing; read for updates and deletes), then the table's columns. With
   * {@code internalNames} those are named as Hive 2.x's FileSinkOperator names them in the files an
   * INSERT writes ({@code _col0, _col1, ...}): readers must name them from the metastore's schema,
   * by position.
   */
  static StructObjectInspector rowInspector(boolean internalNames) {
    ObjectInspector recordId = ObjectInspectorFactory.getStandardStructObjectInspector(
        Arrays.asList("transactionid", "bucketid", "rowid"),
        Arrays.<ObjectInspector>asList(
            PrimitiveObjectInspectorFactory.javaLongObjectInspector,
            PrimitiveObjectInspectorFactory.javaIntObjectInspector,
            PrimitiveObjectInspectorFactory.javaLongObjectInspector));
    return ObjectInspectorFactory.getStandardStructObjectInspector(
        internalNames
            ? Arrays.asList("ROW__ID", "_col0", "_col1", "_col2")
            : Arrays.asList("ROW__ID", "id", "name", "salary"),
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
   * Write one bucket file of events through OrcRecordUpdater, for a split-update table
   * (transactional_properties=default).
   *
   * <p>Each line of {@code events} is one of
   * <pre>
   *   I TAB txn TAB id TAB name TAB salary
   *   U TAB txn TAB originalTxn TAB bucket TAB rowId TAB id TAB name TAB salary
   *   D TAB txn TAB originalTxn TAB bucket TAB rowId
   * </pre>
   * {@code statementId} -1 writes names without a statement suffix.
   *
   * @return the paths of the files that exist after closing, relative to {@code tableDir}
   *     (JSON array)
   */
  public static String writeEvents(String tableDir, String events, long minTxn, long maxTxn, int bucket,
      int statementId, boolean writingBase) throws IOException {
    return writeEvents(tableDir, events, minTxn, maxTxn, bucket, statementId, writingBase, false);
  }

  /** As above; {@code internalNames} names the row columns {@code _col0, ...} (see rowInspector). */
  public static String writeEvents(String tableDir, String events, long minTxn, long maxTxn, int bucket,
      int statementId, boolean writingBase, boolean internalNames) throws IOException {
    Configuration conf = HiveAcidOracle.newConf();
    Path root = new Path(tableDir);
    FileSystem fs = root.getFileSystem(conf);
    root = fs.makeQualified(root);
    Properties tableProperties = new Properties();
    tableProperties.setProperty(hive_metastoreConstants.TABLE_IS_TRANSACTIONAL, "true");
    tableProperties.setProperty(hive_metastoreConstants.TABLE_TRANSACTIONAL_PROPERTIES, "default");
    tableProperties.setProperty("columns", COLUMNS);
    tableProperties.setProperty("columns.types", COLUMN_TYPES.replace(',', ':'));
    AcidOutputFormat.Options options = new AcidOutputFormat.Options(conf)
        .filesystem(fs)
        .inspector(rowInspector(internalNames))
        .tableProperties(tableProperties)
        .writingBase(writingBase)
        .minimumTransactionId(minTxn)
        .maximumTransactionId(maxTxn)
        .bucket(bucket)
        .statementId(statementId)
        .recordIdColumn(0)
        .reporter(Reporter.NULL)
        .finalDestination(root);
    RecordUpdater updater = new OrcOutputFormat().getRecordUpdater(root, options);
    boolean ok = false;
    try {
      for (String line : events.split("\n")) {
        if (line.isEmpty()) {
          continue;
        }
        String[] f = line.split("\t", -1);
        long txn = Long.parseLong(f[1]);
        switch (f[0]) {
          case "I":
            updater.insert(txn, Arrays.asList(null, parseInt(f[2]), parseString(f[3]), parseInt(f[4])));
            break;
          case "U":
            updater.update(txn, Arrays.asList(
                Arrays.asList(Long.parseLong(f[2]), Integer.parseInt(f[3]), Long.parseLong(f[4])),
                parseInt(f[5]), parseString(f[6]), parseInt(f[7])));
            break;
          case "D":
            updater.delete(txn, Arrays.asList(
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
    AcidOutputFormat.Options probe = options.clone();
    for (boolean deleteDelta : new boolean[] {false, true}) {
      if (deleteDelta && writingBase) {
        continue;
      }
      Path file = AcidUtils.createFilename(root, probe.clone().writingDeleteDelta(deleteDelta));
      if (fs.exists(file)) {
        written.add(OracleJson.relative(root.toUri().getPath(), file));
      }
    }
    StringBuilder out = new StringBuilder();
    OracleJson.appendList(out, written);
    return out.toString();
  }

  /**
   * Write a plain (non-ACID) ORC file of rows with Hive's OrcFile writer, as an original file of
   * a table converted to ACID (e.g. {@code 000000_0}). Lines are "id TAB name TAB salary".
   */
  public static void writeOriginal(String file, String rows) throws IOException {
    Configuration conf = HiveAcidOracle.newConf();
    Path path = new Path(file);
    ObjectInspector inspector = ObjectInspectorFactory.getStandardStructObjectInspector(
        Arrays.asList("id", "name", "salary"),
        Arrays.<ObjectInspector>asList(
            PrimitiveObjectInspectorFactory.javaIntObjectInspector,
            PrimitiveObjectInspectorFactory.javaStringObjectInspector,
            PrimitiveObjectInspectorFactory.javaIntObjectInspector));
    Writer writer = OrcFile.createWriter(path, OrcFile.writerOptions(conf)
        .inspector(inspector).fileSystem(path.getFileSystem(conf)));
    try {
      for (String line : rows.split("\n")) {
        if (line.isEmpty()) {
          continue;
        }
        String[] f = line.split("\t", -1);
        writer.addRow(Arrays.asList(parseInt(f[0]), parseString(f[1]), parseInt(f[2])));
      }
    } finally {
      writer.close();
    }
  }

  /** The job configuration Hive's readers need for a full-ACID table of our row type. */
  static JobConf readerConf(String tableDir, String validTxns, int bucketCount, boolean vectorized) {
    JobConf job = new JobConf(HiveAcidOracle.newConf());
    job.set(hive_metastoreConstants.BUCKET_COUNT, Integer.toString(bucketCount));
    job.set(hive_metastoreConstants.TABLE_IS_TRANSACTIONAL, "true");
    job.set(hive_metastoreConstants.TABLE_TRANSACTIONAL_PROPERTIES, "default");
    job.setBoolean(HiveConf.ConfVars.HIVE_TRANSACTIONAL_TABLE_SCAN.varname, true);
    job.setInt(HiveConf.ConfVars.HIVE_TXN_OPERATIONAL_PROPERTIES.varname,
        AcidUtils.AcidOperationalProperties.getDefault().toInt());
    job.set(IOConstants.SCHEMA_EVOLUTION_COLUMNS, COLUMNS);
    job.set(IOConstants.SCHEMA_EVOLUTION_COLUMNS_TYPES, COLUMN_TYPES);
    job.set("columns", COLUMNS);
    job.set("columns.types", COLUMN_TYPES.replace(',', ':'));
    job.setBoolean(HiveConf.ConfVars.HIVE_VECTORIZATION_ENABLED.varname, vectorized);
    job.set(HiveConf.ConfVars.HIVE_ORC_SPLIT_STRATEGY.varname, "BI");
    // File ids exist only on HDFS; asking for them on a local disk logs an error per directory.
    job.setBoolean(HiveConf.ConfVars.HIVE_ORC_INCLUDE_FILE_ID_IN_SPLITS.varname, false);
    job.set(ValidTxnList.VALID_TXNS_KEY, validTxns);
    FileInputFormat.setInputPaths(job, new Path(tableDir));
    return job;
  }

  /**
   * Read a table directory at a snapshot with Hive's own readers.
   *
   * @return a JSON array of rows {@code [[txn, bucket, rowId] or null, id, name, salary]} in the
   *     order Hive returns them (split by split)
   */
  public static String readRows(String tableDir, String validTxns, int bucketCount, boolean vectorized)
      throws IOException, ReflectiveOperationException {
    JobConf job = readerConf(tableDir, validTxns, bucketCount, vectorized);
    OrcInputFormat format = new OrcInputFormat();
    InputSplit[] splits = format.getSplits(job, 1);
    StringBuilder out = new StringBuilder("[");
    boolean first = true;
    for (InputSplit split : splits) {
      List<String> rows = vectorized ? readVectorized(split, job) : readRowMode(format, split, job);
      for (String row : rows) {
        if (!first) {
          out.append(',');
        }
        first = false;
        out.append(row);
      }
    }
    return out.append(']').toString();
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
        RecordIdentifier id = reader instanceof AcidInputFormat.AcidRecordReader
            ? ((AcidInputFormat.AcidRecordReader<?, ?>) reader).getRecordIdentifier() : null;
        StringBuilder row = new StringBuilder("[");
        if (id == null) {
          row.append("null");
        } else {
          row.append('[').append(id.getTransactionId()).append(',').append(id.getBucketId()).append(',')
              .append(id.getRowId()).append(']');
        }
        row.append(',').append(intJson(inspector.getStructFieldData(value, fields.get(0))));
        Object name = inspector.getStructFieldData(value, fields.get(1));
        row.append(',').append(name == null ? "null" : OracleJson.quote(name.toString()));
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

  private static List<String> readVectorized(InputSplit split, JobConf job)
      throws IOException, ReflectiveOperationException {
    List<String> rows = new ArrayList<>();
    if (split instanceof OrcSplit && ((OrcSplit) split).isOriginal()) {
      // Hive 2.3 sends such splits to VectorizedOrcAcidRowReader (row mode underneath), never here.
      throw new IllegalArgumentException("The vectorized ACID reader of Hive 2.3 cannot read the original file "
          + ((OrcSplit) split).getPath() + "; read this table in row mode");
    }
    VectorizedOrcAcidRowBatchReader reader = new VectorizedOrcAcidRowBatchReader(split, job, Reporter.NULL);
    // Hive 2.3's vectorized reader has no ROW__ID virtual column; the event batch it filters
    // (a private field) holds originalTransaction, bucket and rowId at the same positions.
    Field baseField = VectorizedOrcAcidRowBatchReader.class.getDeclaredField("vectorizedRowBatchBase");
    baseField.setAccessible(true);
    try {
      VectorizedRowBatch batch = TypeDescription.fromString(
          "struct<id:int,name:string,salary:int>").createRowBatch();
      batch.setPartitionInfo(3, 0); // three data columns, no partition columns
      while (reader.next(NullWritable.get(), batch)) {
        VectorizedRowBatch events = (VectorizedRowBatch) baseField.get(reader);
        for (int i = 0; i < batch.size; i++) {
          int index = batch.selectedInUse ? batch.selected[i] : i;
          StringBuilder row = new StringBuilder("[[");
          row.append(longAt(events.cols[1], index)).append(',').append(longAt(events.cols[2], index))
              .append(',').append(longAt(events.cols[3], index)).append(']');
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
    return OracleJson.quote(text.toString());
  }
}
