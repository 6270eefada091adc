package acidflow.spark;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.spark.sql.execution.datasources.orc.OrcColumnVector;
import org.apache.spark.sql.types.DataType;

/**
 * Spark's ORC-to-Spark vector adapters (OrcColumnVectorUtils.toOrcColumnVector, package-private
 * in Spark), reached by reflection: the same conversion of ORC values to Spark values that
 * {@code spark.read.orc} uses. A jar on spark.jars has its own class loader, so a class in Spark's
 * package would not share it.
 */
final class OrcVectors {
  private static final MethodHandle TO_SPARK;

  static {
    try {
      Class<?> utils =
          Class.forName("org.apache.spark.sql.execution.datasources.orc.OrcColumnVectorUtils");
      Method method = utils.getDeclaredMethod("toOrcColumnVector", DataType.class, ColumnVector.class);
      method.setAccessible(true);
      TO_SPARK =
          MethodHandles.lookup()
              .unreflect(method)
              .asType(MethodType.methodType(OrcColumnVector.class, DataType.class, ColumnVector.class));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private OrcVectors() {}

  static OrcColumnVector toSpark(DataType type, ColumnVector vector) {
    try {
      return (OrcColumnVector) TO_SPARK.invokeExact(type, vector);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }
}
