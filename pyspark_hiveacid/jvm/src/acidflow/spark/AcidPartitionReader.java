package acidflow.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;
import org.apache.spark.sql.execution.vectorized.ColumnVectorUtils;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Merge-on-read of one bucket, file by file, as Spark columnar batches: the JVM twin of
 * {@code acid_core.orc.reader.scan} (unordered), following the same Hive rules.
 *
 * <pre>
 *   open: every file's footer (event schema checked, legacy non-insert stats), then the
 *         overriding events (OverridingEvents): valid delete events of the delete deltas + valid
 *         update/delete events of data files that may hold them; in memory, sorted
 *         (DeleteRegistry, Hive's ColumnizedDeleteEventRegistry) up to
 *         spark.acidflow.deleteEventsInMemory events, else streamed from the files in key order
 *         (StreamedDeletes, Hive's SortMergedDeleteEventRegistry)
 *   next: one ORC batch of the current file (orc-core, table types, positional evolution)
 *         keep rows whose currentTransaction is valid, that are not delete events, and that the
 *         overriding events do not hide (walked along the file's key order)
 *         -> the kept rows moved down in place (scalars) or selected (nested), partition values
 *            as constants, row__id from the key columns
 * </pre>
 *
 * Original files (pre-ACID): key (0, V1 bucket property, position after the bucket's earlier
 * original files), as OrcInputFormat's OffsetAndBucketProperty computes it.
 */
final class AcidPartitionReader implements PartitionReader<ColumnarBatch> {
  private static final String STATS_KEY = "hive.acid.stats";
  private static final String[] EVENT_NAMES = {
    "operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"
  };
  private static final int OPERATION_DELETE = OverridingEvents.OPERATION_DELETE;
  private static final long V1_FLAG = 1L << 29;

  private final ReadSpec spec;
  private final HiveAcidInputPartition part;
  private final Configuration conf;
  private final ValidWriteIds writeIds;
  private final TypeDescription rowType;
  private final TypeDescription eventType;
  private final StructType rowIdType;
  private final boolean[] nonInserts;
  /** The footers read first, reused to read the files (closed at the end of the task). */
  private final Reader[] dataReaders;
  private final Reader[] deleteReaders;
  private final DeleteRegistry registry;
  private final StreamedDeletes streamed;
  private final ConstantColumnVector[] constants;
  private final SelectedColumnVector.Selection selection = new SelectedColumnVector.Selection();

  private int fileIndex = -1;
  private RecordReader rows;
  private VectorizedRowBatch orcBatch;
  private boolean original;
  private boolean fileNonInserts;
  private long nextOriginalRowId;
  /** The key of the file's last event and the events read from it: equal events collapse. */
  private final long[] lastEvent = new long[4];
  private boolean hasLastEvent;
  private long eventsRead;
  private boolean[] repeated = new boolean[0];
  private RowHider cursor;
  private ColumnarBatch batch;
  private org.apache.spark.sql.vectorized.ColumnVector[] plain;
  private org.apache.spark.sql.vectorized.ColumnVector[] selected;
  private final SparkVectors.Rows batchRows = new SparkVectors.Rows();
  private ColumnVector[] compactable;
  private OnHeapColumnVector originalRowIds;
  private ConstantColumnVector originalWriteId;
  private ConstantColumnVector originalBucket;

  AcidPartitionReader(ReadSpec spec, HiveAcidInputPartition part, Configuration conf) {
    this.spec = spec;
    this.part = part;
    this.conf = conf;
    this.writeIds = ValidWriteIds.parse(spec.writeIds);
    this.rowType = TypeDescription.fromString(spec.rowType);
    this.eventType = eventSchema(rowType);
    this.rowIdType = rowIdOf(spec);
    this.constants = new ConstantColumnVector[spec.kinds.length];
    for (int k = 0; k < spec.kinds.length; k++) {
      if (spec.kinds[k] == ReadSpec.PARTITION) {
        ConstantColumnVector c = new ConstantColumnVector(spec.batchSize, spec.output.fields()[k].dataType());
        ColumnVectorUtils.populate(c, part.partitionValues, spec.indexes[k]);
        constants[k] = c;
      }
    }
    this.nonInserts = new boolean[part.dataPaths.length];
    this.dataReaders = new Reader[part.dataPaths.length];
    this.deleteReaders = new Reader[part.deletePaths.length];
    long events = 0;
    try {
      // Every footer first: a misplaced plain file fails the task before any row is returned.
      for (int i = 0; i < part.dataPaths.length; i++) {
        if (part.dataKinds[i] == HiveAcidInputPartition.ORIGINAL) {
          continue;
        }
        Reader reader = dataReaders[i] = open(part.dataPaths[i], part.dataLengths[i]);
        checkEventSchema(part.dataPaths[i], reader.getSchema());
        nonInserts[i] = mayHoldNonInserts(reader, part.dataKinds[i]);
        if (nonInserts[i]) {
          events += reader.getNumberOfRows();
        }
      }
      for (int i = 0; i < part.deletePaths.length; i++) {
        Reader reader = deleteReaders[i] = open(part.deletePaths[i], part.deleteLengths[i]);
        checkEventSchema(part.deletePaths[i], reader.getSchema());
        events += reader.getNumberOfRows();
      }
    } catch (IOException e) {
      closeReaders();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      closeReaders();
      throw e;
    }
    // Above the limit, Hive's SortMergedDeleteEventRegistry: stream the events in key order.
    boolean stream = events > spec.deleteEventsInMemory;
    this.streamed = stream ? streamedDeletes() : null;
    try {
      this.registry = events == 0 || stream ? null : buildRegistry((int) Math.min(events, Integer.MAX_VALUE - 8));
    } catch (RuntimeException e) {
      closeReaders();
      throw e;
    }
  }

  // -- files -------------------------------------------------------------------------------------

  private Reader open(String path, long length) throws IOException {
    return OrcFile.createReader(
        new Path(path), OrcFile.readerOptions(conf).maxLength(length).useUTCTimestamp(true));
  }

  static TypeDescription eventSchema(TypeDescription row) {
    return TypeDescription.createStruct()
        .addField("operation", TypeDescription.createInt())
        .addField("originalTransaction", TypeDescription.createLong())
        .addField("bucket", TypeDescription.createInt())
        .addField("rowId", TypeDescription.createLong())
        .addField("currentTransaction", TypeDescription.createLong())
        .addField("row", row.clone());
  }

  private static void checkEventSchema(String path, TypeDescription schema) {
    List<String> names = schema.getFieldNames();
    boolean ok = schema.getCategory() == TypeDescription.Category.STRUCT && names.size() == 6;
    for (int i = 0; ok && i < 6; i++) {
      ok = names.get(i).equalsIgnoreCase(EVENT_NAMES[i]);
    }
    ok = ok && schema.getChildren().get(5).getCategory() == TypeDescription.Category.STRUCT;
    if (!ok) {
      throw new IllegalStateException(
          "File '"
              + path
              + "' is not an ACID event file: its columns are "
              + names
              + "; expected struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
              + "currentTransaction:bigint,row:struct<...>>; hint: a plain (non-ACID) ORC file inside "
              + "a base or delta directory is not read; move it to the table directory (an original "
              + "file) or load it through an INSERT");
    }
  }

  /** Whether a file may hold update or delete events (legacy, non-split-update files). */
  private static boolean mayHoldNonInserts(Reader reader, byte kind) {
    if (!reader.hasMetadataValue(STATS_KEY)) {
      return kind != HiveAcidInputPartition.BASE;
    }
    ByteBuffer value = reader.getMetadataValue(STATS_KEY).duplicate();
    byte[] bytes = new byte[value.remaining()];
    value.get(bytes);
    String[] parts = new String(bytes, StandardCharsets.US_ASCII).split(",");
    try {
      for (int i = 1; i < Math.min(parts.length, 3); i++) {
        if (Long.parseLong(parts[i].trim()) > 0) {
          return true;
        }
      }
      return false;
    } catch (NumberFormatException e) {
      return true;
    }
  }

  private static long value(LongColumnVector v, int i) {
    return v.isRepeating ? v.vector[0] : v.vector[i];
  }

  /** Read only the event columns (and none of the row), or the requested row fields. */
  private boolean[] include(TypeDescription schema, boolean keysOnly, boolean withOperation) {
    boolean[] include = new boolean[schema.getMaximumId() + 1];
    include[0] = true;
    List<TypeDescription> top = schema.getChildren();
    for (int i = 0; i < 5; i++) {
      include[top.get(i).getId()] = i > 0 || withOperation;
    }
    if (!keysOnly) {
      TypeDescription row = top.get(5);
      include[row.getId()] = true;
      markRowFields(include, row);
    }
    return include;
  }

  private void markRowFields(boolean[] include, TypeDescription row) {
    List<TypeDescription> fields = row.getChildren();
    for (int k = 0; k < spec.kinds.length; k++) {
      if (spec.kinds[k] == ReadSpec.DATA && spec.indexes[k] < fields.size()) {
        TypeDescription f = fields.get(spec.indexes[k]);
        for (int id = f.getId(); id <= f.getMaximumId(); id++) {
          include[id] = true;
        }
      }
    }
  }

  private RecordReader rowsOf(Reader reader, TypeDescription schema, boolean[] include, int levels)
      throws IOException {
    return reader.rows(
        reader
            .options()
            .schema(schema)
            .include(include)
            .forcePositionalEvolution(true)
            .positionalEvolutionLevel(levels)
            .isSchemaEvolutionCaseAware(false));
  }

  private DeleteRegistry buildRegistry(int capacity) {
    DeleteRegistry reg = new DeleteRegistry(capacity);
    try {
      for (int i = 0; i < deleteReaders.length; i++) {
        collect(reg, part.deletePaths[i], deleteReaders[i], true);
      }
      for (int i = 0; i < part.dataPaths.length; i++) {
        if (nonInserts[i]) {
          collect(reg, part.dataPaths[i], dataReaders[i], false);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    reg.seal();
    return reg;
  }

  /** The valid overriding events of one file (a delete delta: its delete events), from its start. */
  private OverridingEvents eventsOf(String path, Reader reader, boolean deleteDelta) throws IOException {
    RecordReader rows = rowsOf(reader, eventType, include(eventType, true, true), 2);
    return new OverridingEvents(path, rows, eventType, spec.batchSize, deleteDelta, writeIds);
  }

  private void collect(DeleteRegistry reg, String path, Reader reader, boolean deleteDelta)
      throws IOException {
    try (OverridingEvents events = eventsOf(path, reader, deleteDelta)) {
      while (events.next()) {
        reg.add(events.o, events.b, events.r, events.hide);
      }
    }
  }

  private StreamedDeletes streamedDeletes() {
    List<StreamedDeletes.Opener> openers = new java.util.ArrayList<>();
    for (int i = 0; i < part.deletePaths.length; i++) {
      String path = part.deletePaths[i];
      Reader reader = deleteReaders[i];
      openers.add(() -> eventsOf(path, reader, true));
    }
    for (int i = 0; i < part.dataPaths.length; i++) {
      if (nonInserts[i]) {
        String path = part.dataPaths[i];
        Reader reader = dataReaders[i];
        openers.add(() -> eventsOf(path, reader, false));
      }
    }
    return new StreamedDeletes(openers);
  }

  private boolean openNextFile() throws IOException {
    closeFile();
    fileIndex++;
    if (fileIndex >= part.dataPaths.length) {
      return false;
    }
    String path = part.dataPaths[fileIndex];
    original = part.dataKinds[fileIndex] == HiveAcidInputPartition.ORIGINAL;
    fileNonInserts = nonInserts[fileIndex];
    Reader reader = dataReaders[fileIndex];
    if (reader == null) {
      reader = dataReaders[fileIndex] = open(path, part.dataLengths[fileIndex]);
    }
    boolean dataColumns = false;
    for (byte kind : spec.kinds) {
      dataColumns |= kind == ReadSpec.DATA;
    }
    TypeDescription schema;
    if (original) {
      schema = rowType;
      boolean[] include = new boolean[schema.getMaximumId() + 1];
      include[0] = true;
      markRowFields(include, schema);
      rows = rowsOf(reader, schema, include, 1);
    } else {
      schema = eventType;
      rows = rowsOf(reader, schema, include(schema, !dataColumns, fileNonInserts), 2);
    }
    orcBatch = schema.createRowBatch(spec.batchSize);
    hasLastEvent = false;
    eventsRead = 0;
    bindVectors(schema);
    cursor = registry != null ? registry.cursor() : streamed;
    return true;
  }

  /**
   * Spark vectors over this file's ORC batch (one set per file). Where rows are dropped, a column
   * of scalars is compacted in place (kept rows moved down: a few array copies, and Spark's
   * generated code then reads the ORC arrays directly); structs, arrays and maps are read through
   * a selection instead.
   */
  private void bindVectors(TypeDescription schema) {
    int n = spec.kinds.length;
    plain = new org.apache.spark.sql.vectorized.ColumnVector[n];
    selected = new org.apache.spark.sql.vectorized.ColumnVector[n];
    List<ColumnVector> compact = new java.util.ArrayList<>();
    ColumnVector[] rowFields =
        original ? orcBatch.cols : ((StructColumnVector) orcBatch.cols[5]).fields;
    for (int k = 0; k < n; k++) {
      StructField field = spec.output.fields()[k];
      boolean compacted = false;
      switch (spec.kinds[k]) {
        case ReadSpec.DATA -> {
          ColumnVector orc = rowFields[spec.indexes[k]];
          TypeDescription orcType = rowType.getChildren().get(spec.indexes[k]);
          plain[k] = SparkVectors.of(field.dataType(), orcType, orc, batchRows);
          if (Compaction.supports(orc)) {
            compact.add(orc);
            compacted = true;
          }
        }
        case ReadSpec.PARTITION -> {
          plain[k] = constants[k];
          compacted = true; // a constant is the same for any rows
        }
        default -> {
          plain[k] = rowIdVector();
          if (!original) {
            compact.add(orcBatch.cols[1]);
            compact.add(orcBatch.cols[2]);
            compact.add(orcBatch.cols[3]);
          }
          compacted = true; // originals' row IDs are written for the kept rows
        }
      }
      int children = field.dataType() instanceof StructType s ? s.size() : 0;
      selected[k] = compacted ? plain[k] : new SelectedColumnVector(plain[k], selection, children);
    }
    compactable = compact.toArray(new ColumnVector[0]);
    batch = new ColumnarBatch(plain, 0);
  }

  private org.apache.spark.sql.vectorized.ColumnVector rowIdVector() {
    if (original) {
      originalWriteId = new ConstantColumnVector(spec.batchSize, DataTypes.LongType);
      originalWriteId.setLong(0L);
      originalBucket = new ConstantColumnVector(spec.batchSize, DataTypes.IntegerType);
      originalBucket.setInt((int) (V1_FLAG | ((long) part.bucket << 16)));
      originalRowIds = new OnHeapColumnVector(spec.batchSize, DataTypes.LongType);
      return new RowIdColumnVector(rowIdType, originalWriteId, originalBucket, originalRowIds);
    }
    List<TypeDescription> events = eventType.getChildren();
    return new RowIdColumnVector(
        rowIdType,
        SparkVectors.of(DataTypes.LongType, events.get(1), orcBatch.cols[1], batchRows),
        SparkVectors.of(DataTypes.IntegerType, events.get(2), orcBatch.cols[2], batchRows),
        SparkVectors.of(DataTypes.LongType, events.get(3), orcBatch.cols[3], batchRows));
  }

  private static StructType rowIdOf(ReadSpec spec) {
    for (int k = 0; k < spec.kinds.length; k++) {
      if (spec.kinds[k] == ReadSpec.ROW_ID) {
        return (StructType) spec.output.fields()[k].dataType();
      }
    }
    return null;
  }

  private void closeFile() throws IOException {
    if (rows != null) {
      rows.close();
      rows = null;
    }
  }

  // -- batches -----------------------------------------------------------------------------------

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (rows == null && !openNextFile()) {
        return false;
      }
      if (!rows.nextBatch(orcBatch)) {
        closeFile(); // an original file's successor continues its row IDs (nextOriginalRowId)
        continue;
      }
      int n = orcBatch.size;
      if (n == 0) {
        continue;
      }
      int kept = original ? keepOriginal(n) : keepEvents(n);
      if (kept == 0) {
        continue;
      }
      if (kept < n) {
        for (ColumnVector v : compactable) {
          Compaction.compact(v, selection.rows, kept);
        }
      }
      batchRows.count = kept;
      batch = new ColumnarBatch(kept == n ? plain : selected, kept);
      return true;
    }
  }

  private int[] selectionRows(int n) {
    if (selection.rows.length < n) {
      selection.rows = new int[Math.max(n, spec.batchSize)];
    }
    return selection.rows;
  }

  /**
   * Marks the events equal to the one before them in their file (row ID and currentTransaction):
   * Hive's OrcRawRecordMerger returns such an event once, the first (ReaderKey.isSameRow), and so
   * does acidflow's Python reader. An event that sorts before the one before it is refused: Hive
   * writes every file in (writeid, bucketid, rowid) order.
   *
   * @return whether any event of the batch repeats the one before it
   */
  private boolean markRepeated(
      int n, LongColumnVector o, LongColumnVector b, LongColumnVector r, LongColumnVector cur) {
    if (repeated.length < n) {
      repeated = new boolean[Math.max(n, spec.batchSize)];
    }
    boolean any = false;
    for (int i = 0; i < n; i++) {
      long ov = value(o, i);
      long bv = value(b, i);
      long rv = value(r, i);
      long cv = value(cur, i);
      boolean same = false;
      if (hasLastEvent) {
        int order = ov != lastEvent[0] ? Long.compare(ov, lastEvent[0])
            : bv != lastEvent[1] ? Long.compare(bv, lastEvent[1])
            : Long.compare(rv, lastEvent[2]);
        if (order < 0) {
          throw new HiveAcidException(
              "Corrupt ACID data at '" + part.dataPaths[fileIndex] + "': event " + (eventsRead + i)
                  + " has row ID (writeid=" + ov + ", bucketid=" + bv + ", rowid=" + rv + ") after (writeid="
                  + lastEvent[0] + ", bucketid=" + lastEvent[1] + ", rowid=" + lastEvent[2]
                  + "); expected events in (writeid, bucketid, rowid) order in each file, as Hive writes them");
        }
        same = order == 0 && cv == lastEvent[3];
      }
      repeated[i] = same;
      any |= same;
      lastEvent[0] = ov;
      lastEvent[1] = bv;
      lastEvent[2] = rv;
      lastEvent[3] = cv;
      hasLastEvent = true;
    }
    eventsRead += n;
    return any;
  }

  private int keepEvents(int n) {
    int[] sel = selectionRows(n);
    LongColumnVector o = (LongColumnVector) orcBatch.cols[1];
    LongColumnVector b = (LongColumnVector) orcBatch.cols[2];
    LongColumnVector r = (LongColumnVector) orcBatch.cols[3];
    LongColumnVector cur = (LongColumnVector) orcBatch.cols[4];
    boolean[] skip = markRepeated(n, o, b, r, cur) ? repeated : null;
    LongColumnVector op = fileNonInserts ? (LongColumnVector) orcBatch.cols[0] : null;
    boolean checkValid = true;
    if (cur.isRepeating) {
      if (!writeIds.isValid(cur.vector[0])) {
        return 0;
      }
      checkValid = false;
    }
    if (op == null && o.isRepeating && b.isRepeating && !r.isRepeating && streamed == null) {
      return keepOneKeyPrefix(
          n, sel, o.vector[0], OverridingEvents.normalizeBucket(b.vector[0]), r.vector, cur, checkValid, skip);
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
      if (skip != null && skip[i]) {
        continue;
      }
      long current = value(cur, i);
      if (checkValid && !writeIds.isValid(current)) {
        continue;
      }
      if (op != null && value(op, i) == OPERATION_DELETE) {
        continue;
      }
      if (cursor != null
          && cursor.hidden(value(o, i), OverridingEvents.normalizeBucket(value(b, i)), value(r, i), current)) {
        continue;
      }
      sel[kept++] = i;
    }
    selection.size = kept;
    return kept;
  }

  /**
   * The usual batch (one write's inserts: one originalTransaction and bucket): only rowId varies,
   * so the rows meet the registry's events of that (write, bucket) in one merge along rowId.
   */
  private int keepOneKeyPrefix(
      int n, int[] sel, long ov, long bv, long[] rows, LongColumnVector cur, boolean checkValid,
      boolean[] skip) {
    int first = 0;
    int end = 0;
    if (registry != null) {
      first = registry.lowerBound(ov, bv, Long.MIN_VALUE);
      end = registry.endOf(ov, bv);
    }
    boolean merge = first < end;
    int at = merge ? registry.lowerBound(ov, bv, rows[0]) : 0;
    long previous = rows[0];
    int kept = 0;
    for (int i = 0; i < n; i++) {
      long rv = rows[i];
      if (skip != null && skip[i]) {
        continue;
      }
      if (checkValid && !writeIds.isValid(cur.vector[i])) {
        continue;
      }
      if (merge) {
        if (rv < previous) {
          at = registry.lowerBound(ov, bv, rv); // rows out of order: search again
        }
        previous = rv;
        while (at < end && registry.rowIdAt(at) < rv) {
          at++;
        }
        if (at < end && registry.rowIdAt(at) == rv && value(cur, i) < registry.hideAt(at)) {
          continue;
        }
      }
      sel[kept++] = i;
    }
    selection.size = kept;
    return kept;
  }

  private int keepOriginal(int n) {
    int[] sel = selectionRows(n);
    long first = nextOriginalRowId;
    nextOriginalRowId += n;
    long bucket = V1_FLAG | ((long) part.bucket << 16);
    int kept = 0;
    for (int i = 0; i < n; i++) {
      if (cursor != null && cursor.hidden(0L, bucket, first + i, 0L)) {
        continue;
      }
      sel[kept++] = i;
    }
    selection.size = kept;
    if (originalRowIds != null) {
      for (int k = 0; k < kept; k++) {
        originalRowIds.putLong(k, first + sel[k]);
      }
    }
    return kept;
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  private void closeReaders() {
    for (Reader[] readers : new Reader[][] {dataReaders, deleteReaders}) {
      for (int i = 0; i < readers.length; i++) {
        if (readers[i] != null) {
          try {
            readers[i].close();
          } catch (IOException ignored) {
            // a footer reader holds nothing that must be flushed
          }
          readers[i] = null;
        }
      }
    }
  }

  @Override
  public void close() throws IOException {
    try {
      closeFile();
      if (streamed != null) {
        streamed.close();
      }
    } finally {
      closeReaders();
    }
  }
}
