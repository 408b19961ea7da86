"""Which Spark expressions a generation expression may use, as Delta's
``GeneratedColumn.validateGeneratedColumns`` decides it at CREATE TABLE: the analysed
expression tree is walked, parents first, and the first node that is a user-defined
function, non-deterministic, an aggregate, or of a class outside Delta's
``AllowedUserProvidedExpressions.expressions`` (generators, window functions, subqueries,
``current_timestamp``, lambda functions, ...) refuses the column."""

from __future__ import annotations

from typing import Any

from deltalog.contrib.spark.errors import DeltaAnalysisError

__all__ = ["ALLOWED_EXPRESSIONS", "check_generation_expression_tree"]

#: the simple class names of Delta's ``AllowedUserProvidedExpressions.expressions`` (Spark's
#: built-in functions less generators, aggregates, window functions and the non-deterministic
#: ones, plus column references and literals)
ALLOWED_EXPRESSIONS = frozenset(
    {
        "Abs",
        "Acos",
        "Acosh",
        "Add",
        "AddMonths",
        "And",
        "ArrayAggregate",
        "ArrayContains",
        "ArrayDistinct",
        "ArrayExcept",
        "ArrayExists",
        "ArrayFilter",
        "ArrayForAll",
        "ArrayIntersect",
        "ArrayJoin",
        "ArrayMax",
        "ArrayMin",
        "ArrayPosition",
        "ArrayRemove",
        "ArrayRepeat",
        "ArraySort",
        "ArrayTransform",
        "ArrayUnion",
        "ArraysOverlap",
        "ArraysZip",
        "Ascii",
        "Asin",
        "Asinh",
        "AssertTrue",
        "Atan",
        "Atan2",
        "Atanh",
        "AttributeReference",
        "BRound",
        "Base64",
        "Bin",
        "BitLength",
        "BitwiseAnd",
        "BitwiseCount",
        "BitwiseNot",
        "BitwiseOr",
        "BitwiseXor",
        "CaseWhen",
        "Cast",
        "Cbrt",
        "Ceil",
        "Chr",
        "Coalesce",
        "Concat",
        "ConcatWs",
        "Conv",
        "Cos",
        "Cosh",
        "Cot",
        "Crc32",
        "CreateArray",
        "CreateMap",
        "CreateNamedStruct",
        "CsvToStructs",
        "DateAdd",
        "DateDiff",
        "DateFormatClass",
        "DateSub",
        "DayOfMonth",
        "DayOfWeek",
        "DayOfYear",
        "Decode",
        "Divide",
        "ElementAt",
        "Elt",
        "Encode",
        "EqualNullSafe",
        "EqualTo",
        "EulerNumber",
        "Exp",
        "Expm1",
        "Extract",
        "Factorial",
        "FindInSet",
        "Flatten",
        "Floor",
        "FormatNumber",
        "FormatString",
        "FromUTCTimestamp",
        "FromUnixTime",
        "GetJsonObject",
        "GetTimestamp",
        "GreaterThan",
        "GreaterThanOrEqual",
        "Greatest",
        "Hex",
        "Hour",
        "Hypot",
        "If",
        "In",
        "InitCap",
        "IntegralDivide",
        "IsNaN",
        "IsNotNull",
        "IsNull",
        "JsonToStructs",
        "JsonTuple",
        "LastDay",
        "Least",
        "Left",
        "Length",
        "LessThan",
        "LessThanOrEqual",
        "Levenshtein",
        "Like",
        "Literal",
        "Log",
        "Log10",
        "Log1p",
        "Log2",
        "Logarithm",
        "Lower",
        "MakeDate",
        "MakeInterval",
        "MakeTimestamp",
        "MapConcat",
        "MapEntries",
        "MapFilter",
        "MapFromArrays",
        "MapFromEntries",
        "MapKeys",
        "MapValues",
        "MapZipWith",
        "Md5",
        "Minute",
        "Month",
        "MonthsBetween",
        "Multiply",
        "Murmur3Hash",
        "NaNvl",
        "NextDay",
        "Not",
        "Now",
        "NullIf",
        "Nvl",
        "Nvl2",
        "OctetLength",
        "Or",
        "Overlay",
        "ParseToDate",
        "ParseToTimestamp",
        "ParseUrl",
        "Pi",
        "Pmod",
        "Pow",
        "Quarter",
        "RLike",
        "RegExpExtract",
        "RegExpReplace",
        "Remainder",
        "Reverse",
        "Right",
        "Rint",
        "Round",
        "SchemaOfCsv",
        "SchemaOfJson",
        "Second",
        "Sentences",
        "Sequence",
        "Sha1",
        "Sha2",
        "ShiftLeft",
        "ShiftRight",
        "ShiftRightUnsigned",
        "Signum",
        "Sin",
        "Sinh",
        "Size",
        "Slice",
        "SortArray",
        "SoundEx",
        "Sqrt",
        "StringInstr",
        "StringLPad",
        "StringLocate",
        "StringRPad",
        "StringRepeat",
        "StringReplace",
        "StringSpace",
        "StringSplit",
        "StringToMap",
        "StringTranslate",
        "StringTrim",
        "StringTrimLeft",
        "StringTrimRight",
        "StructsToCsv",
        "StructsToJson",
        "Substring",
        "SubstringIndex",
        "Subtract",
        "Tan",
        "Tanh",
        "TimeWindow",
        "TimestampAdd",
        "TimestampDiff",
        "ToDegrees",
        "ToRadians",
        "ToUTCTimestamp",
        "ToUnixTimestamp",
        "TransformKeys",
        "TransformValues",
        "TruncDate",
        "TruncTimestamp",
        "TypeOf",
        "UnBase64",
        "UnaryMinus",
        "UnaryPositive",
        "Unhex",
        "UnixTimestamp",
        "Upper",
        "WeekDay",
        "WeekOfYear",
        "XPathBoolean",
        "XPathDouble",
        "XPathFloat",
        "XPathInt",
        "XPathList",
        "XPathLong",
        "XPathShort",
        "XPathString",
        "XxHash64",
        "Year",
        "ZipWith",
    }
)

_CATALYST = "org.apache.spark.sql.catalyst.expressions."
#: nodes Delta skips, their children still checked: an alias, and the complex type
#: extractors (which have no function name)
_PASSED = ("Alias", "GetStructField", "GetArrayItem")


def check_generation_expression_tree(spark: Any, column: str, analyzed_plan: Any) -> None:
    """Raise :class:`DeltaAnalysisError` for the first expression of ``analyzed_plan`` (a
    JVM ``LogicalPlan`` projecting the generation expression of ``column``) that Delta
    refuses in a generated column: ``DELTA_UDF_IN_GENERATED_COLUMN``,
    ``DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN``,
    ``DELTA_AGGREGATE_IN_GENERATED_COLUMN`` or ``DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN``."""
    jvm = spark.sparkContext._jvm
    kinds = {
        "udf": jvm.java.lang.Class.forName(_CATALYST + "UserDefinedExpression"),
        "aggregate": jvm.java.lang.Class.forName(_CATALYST + "aggregate.AggregateExpression"),
    }
    plans = [analyzed_plan]
    while plans:
        plan = plans.pop(0)
        for expression in _seq(plan.expressions()):
            _check_expression(column, expression, kinds)
        plans.extend(_seq(plan.children()))


def _check_expression(column: str, root: Any, kinds: dict[str, Any]) -> None:
    """Walk ``root`` parents first, as Delta's ``transformAllExpressions`` does."""
    pending = [root]
    while pending:
        expression = pending.pop(0)
        name = str(expression.getClass().getSimpleName())
        if name not in _PASSED:
            refusal = _refusal(expression, name, kinds)
            if refusal is not None:
                raise DeltaAnalysisError(f"{refusal} (generated column {column})")
        pending[:0] = _seq(expression.children())


def _refusal(expression: Any, name: str, kinds: dict[str, Any]) -> str | None:
    sql = str(expression.sql())
    if kinds["udf"].isInstance(expression):
        return f"DELTA_UDF_IN_GENERATED_COLUMN: Found {sql}. A generated column cannot use a user-defined function"
    if not expression.deterministic():
        return (
            f"DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN: Found {sql}. A generated column cannot use "
            "a non deterministic expression."
        )
    if kinds["aggregate"].isInstance(expression):
        return (
            f"DELTA_AGGREGATE_IN_GENERATED_COLUMN: Found {sql}. A generated column cannot use an aggregate expression"
        )
    if name not in ALLOWED_EXPRESSIONS:
        return f"DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN: {sql} cannot be used in a generated column"
    return None


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]
