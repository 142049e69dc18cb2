package schemakit.spark;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code from_registry(value)} as a Catalyst expression: binary in, the decoder's internal value out.
 *
 * <p>An expression rather than a Java UDF because a UDF must return external objects ({@code Row},
 * {@code String}, lists) that Spark then converts to its internal form field by field; measured, that
 * conversion cost about as much as decoding. Generated code calls {@link AvroRegistryDecoder#decode} directly
 * (whole-stage code generation stays on); interpreted evaluation does the same. The plan shows
 * {@code from_registry(<child>)} only: the decoder, which holds the registry options, is not printed.
 *
 * <p>It extends {@code Expression}, not {@code UnaryExpression}: javac cannot compile a Java subclass of the
 * latter (its Scala mixin's {@code withNewChildrenInternal} is final with an erased signature javac does not
 * accept as the implementation), so the one-child plumbing is written out here.
 */
public final class RegistryDecodeExpression extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Expression child;
  private final AvroRegistryDecoder decoder;
  private final DataType type;

  public RegistryDecodeExpression(Expression child, AvroRegistryDecoder decoder, DataType type) {
    this.child = child;
    this.decoder = decoder;
    this.type = type;
  }

  /** {@code decoder} applied to {@code input} as a column of type {@code typeJson} (Spark's JSON form). */
  public static Column column(Column input, AvroRegistryDecoder decoder, String typeJson) {
    return ExpressionUtils.column(new RegistryDecodeExpression(ExpressionUtils.expression(input), decoder,
        DataType.fromJson(typeJson)));
  }

  @Override
  public Seq<Expression> children() {
    return CollectionConverters.asScala(Arrays.asList(child)).toList();
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
    return new RegistryDecodeExpression(newChildren.apply(0), decoder, type);
  }

  @Override
  public DataType dataType() {
    return type;
  }

  @Override
  public boolean nullable() {
    return true;
  }

  @Override
  public String prettyName() {
    return "from_registry";
  }

  @Override
  public String toString() {
    return prettyName() + "(" + child + ")";
  }

  @Override
  public TypeCheckResult checkInputDataTypes() {
    if (child.dataType() instanceof BinaryType) {
      return TypeCheckResult.TypeCheckSuccess$.MODULE$;
    }
    return new TypeCheckResult.TypeCheckFailure("from_registry needs a binary column (Confluent-framed payloads), not "
        + child.dataType().simpleString());
  }

  @Override
  public Object eval(InternalRow row) {
    Object input = child.eval(row);
    return input == null ? null : decoder.decode((byte[]) input);
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    ExprCode input = child.genCode(ctx);
    String decoderRef = ctx.addReferenceObj("fromRegistry", decoder, AvroRegistryDecoder.class.getName());
    String isNull = ctx.freshName("isNull");
    String value = ctx.freshName("value");
    String decoded = ctx.freshName("decoded");
    String code = "\nboolean " + isNull + " = " + input.isNull() + ";\n"
        + CodeGenerator.javaType(type) + " " + value + " = " + CodeGenerator.defaultValue(type, false) + ";\n"
        + "if (!" + isNull + ") {\n"
        + "  Object " + decoded + " = " + decoderRef + ".decode(" + input.value() + ");\n"
        + "  if (" + decoded + " == null) {\n    " + isNull + " = true;\n  } else {\n    "
        + value + " = (" + CodeGenerator.boxedType(type) + ") " + decoded + ";\n  }\n}\n";
    // the child's code block goes in as an input (not as text), so Spark keeps track of what it uses
    CodeBlock block = new CodeBlock(CollectionConverters.asScala(Arrays.asList("", code)).toList(),
        CollectionConverters.asScala(Arrays.<JavaCode>asList(input.code())).toList());
    return ev.copy(block, JavaCode.isNullVariable(isNull), JavaCode.variable(value, type));
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0:
        return child;
      case 1:
        return decoder;
      case 2:
        return type;
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof RegistryDecodeExpression;
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof RegistryDecodeExpression)) {
      return false;
    }
    RegistryDecodeExpression that = (RegistryDecodeExpression) other;
    return child.equals(that.child) && decoder.equals(that.decoder) && type.equals(that.type);
  }

  @Override
  public int hashCode() {
    return Objects.hash(child, decoder, type);
  }
}
