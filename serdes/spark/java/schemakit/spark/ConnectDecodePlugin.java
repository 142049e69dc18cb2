package schemakit.spark;

import java.util.Optional;
import org.apache.spark.connect.proto.Expression.UnresolvedFunction;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.ExpressionPlugin;
import org.apache.spark.sql.types.DataType;
import org.sparkproject.connect.protobuf.Any;
import org.sparkproject.connect.protobuf.InvalidProtocolBufferException;

/**
 * The JVM engine on a Spark Connect server: turns the client's {@code from_registry} extension expression into
 * a {@link RegistryDecodeExpression}.
 *
 * <p>A Connect client has no py4j gateway to build the expression with, so it sends an extension expression
 * instead (Connect's way for server plugins): a protobuf {@code Any} of type {@link #TYPE_URL} holding Connect's
 * own {@code Expression} message, an unresolved function whose arguments are the input column, the decoder's
 * JSON spec and the result type's JSON. The server loads this class when started with the jar on
 * {@code spark.jars} and {@code spark.connect.extensions.expression.classes=schemakit.spark.ConnectDecodePlugin}.
 * Other extension expressions are left to the other plugins (empty result).
 */
public final class ConnectDecodePlugin implements ExpressionPlugin {
  public static final String TYPE_URL = "type.googleapis.com/schemakit.spark.FromRegistry";

  @Override
  public Optional<Expression> transform(byte[] message, SparkConnectPlanner planner) {
    try {
      Any any = Any.parseFrom(message);
      if (!TYPE_URL.equals(any.getTypeUrl())) {
        return Optional.empty();
      }
      UnresolvedFunction call =
          org.apache.spark.connect.proto.Expression.parseFrom(any.getValue()).getUnresolvedFunction();
      if (call.getArgumentsCount() != 3) {
        throw new IllegalArgumentException(
            "from_registry extension: 3 arguments expected (column, spec, type), got " + call.getArgumentsCount());
      }
      Expression child = planner.transformExpression(call.getArguments(0));
      AvroRegistryDecoder decoder = new AvroRegistryDecoder(call.getArguments(1).getLiteral().getString());
      DataType type = DataType.fromJson(call.getArguments(2).getLiteral().getString());
      return Optional.of(new RegistryDecodeExpression(child, decoder, type));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("from_registry extension: not a protobuf message: " + e.getMessage(), e);
    }
  }
}
