"""Decision parsing: tolerant extraction, strict validation, exact errors, round trips."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.domain.decisions import (
    Action,
    BetOrder,
    PanelForecast,
    SellOrder,
    ValidationContext,
    ValidDecision,
    extract_json_object,
    parse_decision,
    resolve_side,
    validate_decision,
)
from arena.domain.markets import MarketView
from arena.errors import MalformedResponse
from tests.domain.prompt_builders import binary, context, named, position

BIN = binary("559651", "0.62", volume=100)
TEAM = named("601234", ("Lakers", "Celtics"), ("0.55", "0.45"), volume=90)
ODD = named("700", ("Over 2.5", "A=1; or | B"), ("0.4", "0.6"), volume=80)
HELD_ONLY = binary("42", "0.3", volume=1)


def vctx(methodology: str = "v1", cash: str = "9500") -> ValidationContext:
    ctx = context(
        markets=[BIN, TEAM, ODD],
        positions=[position("p1", BIN, "YES"), position("p2", HELD_ONLY, "NO")],
        cash=cash,
        methodology=methodology,
        panel=[BIN, TEAM] if methodology == "v2" else [],
    )
    return ValidationContext.from_prompt(ctx)


def errors_of(payload: dict, ctx: ValidationContext | None = None) -> str:
    with pytest.raises(MalformedResponse) as info:
        validate_decision(payload, ctx or vctx())
    return str(info.value)


# --- extraction -------------------------------------------------------------------------------

HOLD = {"action": "HOLD", "reasoning": "wait"}


@pytest.mark.parametrize(
    "text",
    [
        '{"action": "HOLD", "reasoning": "wait"}',
        '```json\n{"action": "HOLD", "reasoning": "wait"}\n```',
        'Sure! Here is my decision:\n```\n{"action": "HOLD", "reasoning": "wait"}\n```\nGood luck.',
        'I considered {"action": "BET"} but then: {"action": "HOLD", "reasoning": "wait"}',
        '{"action": "HOLD", "reasoning": "wait",}',
        "{'action': 'HOLD', 'reasoning': 'wait'}",
        '{"action": "HOLD", // no trade\n "reasoning": "wait"}',
        'Brace {yourself. {"action": "HOLD", "reasoning": "wait"}',
        '{"action": "HOLD", "reasoning": "wait"} and a note {"x": 1}',
        '[{"action": "HOLD", "reasoning": "wait"}]',
    ],
)
def test_extracts_the_answer_object(text):
    assert extract_json_object(text) == HOLD


def test_a_repaired_final_answer_beats_a_valid_draft():
    text = 'Draft: {"action": "BET"}\nFinal: {"action": "HOLD", "reasoning": "wait",}'
    assert extract_json_object(text) == HOLD


def test_a_broken_outer_answer_beats_its_valid_inner_objects():
    text = '{"action": "SELL", "sells": [{"position_id": "p1", "percentage": 50}],} done'
    assert extract_json_object(text)["action"] == "SELL"


def test_braces_inside_strings_do_not_confuse_extraction():
    text = 'prose {"action": "HOLD", "reasoning": "sets {a, b} and \\"quotes\\" }"} end'
    assert extract_json_object(text)["reasoning"] == 'sets {a, b} and "quotes" }'


def test_repaired_object_with_trailing_commas_in_lists():
    text = '```json\n{"action": "SELL", "sells": [{"position_id": "p1", "percentage": 50,},],}\n```'
    assert extract_json_object(text) == {
        "action": "SELL",
        "sells": [{"position_id": "p1", "percentage": 50}],
    }


def test_trailing_commas_inside_strings_are_kept():
    text = 'ok: {"action": "HOLD", "reasoning": "a \\",} b,]", "x": [1, 2,],}'
    assert extract_json_object(text) == {"action": "HOLD", "reasoning": 'a ",} b,]', "x": [1, 2]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "empty"),
        ("   ", "empty"),
        ("I would rather hold this week.", "no JSON object found"),
        (
            '{"action": "BET", "bets": [{"market_id": "559651", "side": "YES", "amount": 5',
            "cut off",
        ),
    ],
)
def test_extraction_failures(text, message):
    with pytest.raises(MalformedResponse, match=message):
        extract_json_object(text)


def test_object_without_action_is_returned_for_validation_to_reject():
    payload = extract_json_object('{"decision": "HOLD"}')
    assert "action is missing" in errors_of(payload)


# --- validation: accepted ---------------------------------------------------------------------


def test_valid_bet_with_canonical_sides_and_exact_amounts():
    payload = {
        "action": "bet",
        "bets": [
            {"market_id": 559651, "side": "no", "amount": 100.1},
            {"market_id": " 601234 ", "side": "celtics", "amount": "50"},
            {"market_id": "700", "side": "a-1, or / b", "amount": 2375},
        ],
        "reasoning": "edges",
    }
    decision = validate_decision(payload, vctx())
    assert decision == ValidDecision(
        action=Action.BET,
        bets=(
            BetOrder("559651", "NO", Decimal("100.1")),
            BetOrder("601234", "Celtics", Decimal(50)),
            BetOrder("700", "A=1; or | B", Decimal(2375)),
        ),
        reasoning="edges",
    )
    assert str(decision.bets[0].amount) == "100.1"


def test_same_market_both_sides_is_allowed():
    payload = {
        "action": "BET",
        "bets": [
            {"market_id": "559651", "side": "YES", "amount": 50},
            {"market_id": "559651", "side": "NO", "amount": 50},
        ],
    }
    assert len(validate_decision(payload, vctx()).bets) == 2


def test_valid_sell_including_a_held_only_market():
    payload = {
        "action": "SELL",
        "sells": [
            {"position_id": "p1", "percentage": 100},
            {"position_id": "p2", "percentage": 0.5},
        ],
    }
    decision = validate_decision(payload, vctx())
    assert decision.sells == (SellOrder("p1", Decimal(100)), SellOrder("p2", Decimal("0.5")))


def test_hold_ignores_extra_fields_and_missing_reasoning():
    decision = validate_decision({"action": "HOLD", "bets": "whatever"}, vctx())
    assert decision == ValidDecision(Action.HOLD)


def test_non_string_reasoning_is_kept_as_json():
    decision = validate_decision({"action": "HOLD", "reasoning": ["a", "b"]}, vctx())
    assert decision.reasoning == '["a", "b"]'


def test_v1_ignores_probability_and_forecasts():
    payload = {
        "action": "BET",
        "bets": [
            {"market_id": "559651", "side": "YES", "amount": 60, "probability": "junk"},
        ],
        "forecasts": "junk",
    }
    decision = validate_decision(payload, vctx())
    assert decision.bets[0].probability is None
    assert decision.forecasts == ()


def test_amount_exactly_at_the_limits():
    ctx = vctx(cash="200")  # max bet 50.00 = min bet
    payload = {"action": "BET", "bets": [{"market_id": "559651", "side": "YES", "amount": 50.0}]}
    assert validate_decision(payload, ctx).bets[0].amount == Decimal(50)


# --- validation: rejected, with exact messages ------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"reasoning": "x"}, 'action is missing: use one of "BET", "SELL", "HOLD"'),
        ({"action": "BUY"}, 'action "BUY" is not one of "BET", "SELL", "HOLD"'),
        ({"action": 3}, 'action 3 is not one of "BET", "SELL", "HOLD"'),
        ({"action": ["BET"]}, 'action ["BET"] is not one of "BET", "SELL", "HOLD"'),
        ({"action": "BET"}, "bets is missing"),
        ({"action": "BET", "bets": []}, "bets must not be empty"),
        (
            {"action": "BET", "bets": {"market_id": "1"}},
            'bets must be a list, got {"market_id": "1"}',
        ),
        ({"action": "SELL", "sells": []}, "sells must not be empty"),
        ({"action": "BET", "bets": ["x"]}, 'bets[0] must be an object, got "x"'),
        (
            {"action": "BET", "bets": [{"side": "YES", "amount": 60}]},
            "bets[0].market_id is missing",
        ),
        (
            {"action": "BET", "bets": [{"market_id": 1.5, "side": "YES", "amount": 60}]},
            "bets[0].market_id 1.5 is not an id (write it as a string)",
        ),
        (
            {"action": "BET", "bets": [{"market_id": "559651", "side": "YES", "amount": "$60"}]},
            'bets[0].amount "$60" is not a number',
        ),
        (
            {"action": "BET", "bets": [{"market_id": "559651", "side": "YES", "amount": True}]},
            "bets[0].amount true is not a number",
        ),
        (
            {
                "action": "BET",
                "bets": [
                    {"market_id": "559651", "side": "YES", "amount": 60},
                    {"market_id": "559651", "side": "NO", "amount": float("inf")},
                ],
            },
            "bets[1].amount Infinity is not a finite number",
        ),
        (
            {"action": "BET", "bets": [{"market_id": "559651", "side": "", "amount": 60}]},
            'bets[0].side "" is not a non-empty string',
        ),
        (
            {
                "action": "BET",
                "bets": [
                    {"market_id": "559651", "side": "YES", "amount": 60},
                    {"market_id": "601234", "side": "Lakers", "amount": 12.0},
                ],
            },
            "bets[1].amount 12.0 is below the minimum bet 50",
        ),
        (
            {"action": "BET", "bets": [{"market_id": "559651", "side": "YES", "amount": 2375.01}]},
            "bets[0].amount 2375.01 is above the maximum bet 2375.00",
        ),
        (
            {"action": "BET", "bets": [{"market_id": "999", "side": "YES", "amount": 60}]},
            'bets[0].market_id "999" is not in the MARKETS list',
        ),
        (
            {"action": "BET", "bets": [{"market_id": "42", "side": "YES", "amount": 60}]},
            "can be sold, not bet on",
        ),
        (
            {"action": "BET", "bets": [{"market_id": "559651", "side": "Maybe", "amount": 60}]},
            'bets[0].side "Maybe" is not a side of market 559651 (use one of: YES, NO)',
        ),
        (
            {"action": "BET", "bets": [{"market_id": "601234", "side": "YES", "amount": 60}]},
            "(use one of: Lakers, Celtics)",
        ),
        (
            {
                "action": "BET",
                "bets": [
                    {"market_id": "601234", "side": "Lakers", "amount": 60},
                    {"market_id": "601234", "side": "lakers", "amount": 70},
                ],
            },
            'bets[1] repeats market 601234 side "Lakers" of bets[0]: one bet per market and side',
        ),
        (
            {"action": "SELL", "sells": [{"position_id": "p9", "percentage": 100}]},
            'sells[0].position_id "p9" is not one of your open positions',
        ),
        (
            {"action": "SELL", "sells": [{"position_id": "p1", "percentage": 0}]},
            "sells[0].percentage 0 is outside (0, 100]",
        ),
        (
            {"action": "SELL", "sells": [{"position_id": "p1", "percentage": 100.5}]},
            "sells[0].percentage 100.5 is outside (0, 100]",
        ),
        (
            {
                "action": "SELL",
                "sells": [
                    {"position_id": "p1", "percentage": 50},
                    {"position_id": "p1", "percentage": 50},
                ],
            },
            "sells[1] repeats position p1 of sells[0]",
        ),
    ],
)
def test_rejections_name_the_exact_error(payload, message):
    assert message in errors_of(payload)


def test_total_above_cash_is_rejected():
    ctx = vctx(cash="120")  # max bet 30 < min bet: every bet is also too big
    payload = {
        "action": "BET",
        "bets": [
            {"market_id": "559651", "side": "YES", "amount": 60},
            {"market_id": "601234", "side": "Lakers", "amount": 70},
        ],
    }
    assert "the bets add up to 130, more than the cash balance 120" in errors_of(payload, ctx)


def test_sum_rule_uses_the_cash_shown():
    ctx = ValidationContext(
        markets={m.id: m for m in (BIN, TEAM)},
        position_ids=frozenset(),
        cash=Decimal(100),
        min_bet=Decimal(50),
        max_bet=Decimal(100),
    )
    payload = {
        "action": "BET",
        "bets": [
            {"market_id": "559651", "side": "YES", "amount": 50},
            {"market_id": "601234", "side": "Lakers", "amount": 50.01},
        ],
    }
    assert "add up to 100.01, more than the cash balance 100" in errors_of(payload, ctx)


def test_all_rule_errors_are_reported_together():
    message = errors_of(
        {
            "action": "BET",
            "bets": [
                {"market_id": "559651", "side": "YES", "amount": 10},
                {"market_id": "999", "side": "YES", "amount": 60},
            ],
        }
    )
    assert message == (
        "bets[0].amount 10 is below the minimum bet 50; "
        'bets[1].market_id "999" is not in the MARKETS list'
    )


def test_many_errors_are_capped():
    bets = [{"market_id": str(1000 + i), "side": "YES", "amount": 60} for i in range(12)]
    assert errors_of({"action": "BET", "bets": bets}).endswith("(and 4 more errors)")


# --- v2: probabilities and forecasts ----------------------------------------------------------

GOOD_FORECASTS = [
    {"market_id": "559651", "probability": 0.7},
    {"market_id": "601234", "probabilities": {"lakers": 0.6, "Celtics": 0.4}},
]


def test_v2_hold_with_forecasts():
    decision = validate_decision({"action": "HOLD", "forecasts": GOOD_FORECASTS}, vctx("v2"))
    assert decision.forecasts == (
        PanelForecast("559651", "YES", Decimal("0.7")),
        PanelForecast("601234", "Lakers", Decimal("0.6")),
        PanelForecast("601234", "Celtics", Decimal("0.4")),
    )


def test_v2_bet_needs_a_probability():
    payload = {
        "action": "BET",
        "forecasts": GOOD_FORECASTS,
        "bets": [
            {"market_id": "559651", "side": "NO", "amount": 60, "probability": 0.45},
            {"market_id": "601234", "side": "Lakers", "amount": 60},
        ],
    }
    assert errors_of(payload, vctx("v2")) == "bets[1].probability is missing"
    payload["bets"][1]["probability"] = "0.6"
    decision = validate_decision(payload, vctx("v2"))
    assert [b.probability for b in decision.bets] == [Decimal("0.45"), Decimal("0.6")]


def test_binary_forecast_may_be_given_as_probabilities_of_yes():
    forecasts = [{"market_id": 559651, "probabilities": {"Yes": 0.3, "No": 0.7}}, GOOD_FORECASTS[1]]
    decision = validate_decision({"action": "HOLD", "forecasts": forecasts}, vctx("v2"))
    assert decision.forecasts[0] == PanelForecast("559651", "YES", Decimal("0.3"))


@pytest.mark.parametrize(
    ("forecasts", "message"),
    [
        (None, "forecasts is missing: give one for each of the 2 panel markets"),
        ("none", 'forecasts must be a list, got "none"'),
        ([GOOD_FORECASTS[0]], "forecasts has no entry for panel markets 601234"),
        (
            [*GOOD_FORECASTS, {"market_id": "700", "probability": 0.5}],
            'forecasts[2].market_id "700" is not in the FORECAST PANEL',
        ),
        (
            [*GOOD_FORECASTS, {"market_id": "559651", "probability": 0.5}],
            "forecasts[2] repeats the forecast for market 559651",
        ),
        (
            [{"market_id": "559651", "probability": 62}, GOOD_FORECASTS[1]],
            "forecasts[0].probability 62 is outside [0, 1] (write 0.62 for 62%)",
        ),
        (
            [{"market_id": "559651", "probability": -0.1}, GOOD_FORECASTS[1]],
            "forecasts[0].probability -0.1 is outside [0, 1]",
        ),
        (
            [{"market_id": "559651"}, GOOD_FORECASTS[1]],
            'forecasts[0] (market 559651, a YES/NO market) needs "probability"',
        ),
        (
            [GOOD_FORECASTS[0], {"market_id": "601234", "probability": 0.6}],
            'forecasts[1] (market 601234) needs "probabilities" for each outcome: Lakers, Celtics',
        ),
        (
            [GOOD_FORECASTS[0], {"market_id": "601234", "probabilities": {"Lakers": 1}}],
            "forecasts[1].probabilities lacks outcomes: Celtics",
        ),
        (
            [
                GOOD_FORECASTS[0],
                {"market_id": "601234", "probabilities": {"Lakers": 0.7, "Celtics": 0.4}},
            ],
            "forecasts[1].probabilities add up to 1.1, not 1",
        ),
        (
            [
                GOOD_FORECASTS[0],
                {"market_id": "601234", "probabilities": {"Lakers": 0.5, "Bulls": 0.5}},
            ],
            'forecasts[1].probabilities has "Bulls", not an outcome of market 601234',
        ),
        (
            [GOOD_FORECASTS[0], {"market_id": "601234", "probabilities": [0.5, 0.5]}],
            "forecasts[1].probabilities must be an object, got [0.5, 0.5]",
        ),
        ([{"probability": 0.5}], "forecasts[0].market_id is missing"),
    ],
)
def test_v2_forecast_rejections(forecasts, message):
    assert message in errors_of({"action": "HOLD", "forecasts": forecasts}, vctx("v2"))


def test_probabilities_within_tolerance_are_kept_as_given():
    forecasts = [
        GOOD_FORECASTS[0],
        {"market_id": "601234", "probabilities": {"Lakers": 0.33, "Celtics": 0.66}},
    ]
    decision = validate_decision({"action": "HOLD", "forecasts": forecasts}, vctx("v2"))
    assert [f.probability for f in decision.forecasts[1:]] == [Decimal("0.33"), Decimal("0.66")]


def test_resolve_side():
    assert resolve_side(BIN, " yes ") == "YES"
    assert resolve_side(TEAM, "CELTICS") == "Celtics"
    assert resolve_side(ODD, "over 2.5") == "Over 2.5"
    assert resolve_side(TEAM, "YES") is None


def test_to_json_dict_is_json_and_parses_back():
    decision = validate_decision(
        {
            "action": "BET",
            "forecasts": GOOD_FORECASTS,
            "reasoning": "r",
            "bets": [
                {"market_id": "559651", "side": "NO", "amount": 60.25, "probability": 0.45},
            ],
        },
        vctx("v2"),
    )
    text = json.dumps(decision.to_json_dict())
    assert parse_decision(text, vctx("v2"))[1] == decision


# --- property: any valid decision round-trips through any wrapping -----------------------------

PANEL = [BIN, TEAM, ODD]
WRAPPERS = [
    "{}",
    "```json\n{}\n```",
    "Here is my decision.\n\n```\n{}\n```\n\nThat is all.",
    'Draft: {"note": "thinking"}\nFinal answer: {}',
    "{} -- chosen after careful thought",
]


def _number(draw, value: Decimal):
    style = draw(st.sampled_from(["float", "str", "int"]))
    if style == "str":
        return str(value)
    if style == "int" and value == value.to_integral_value():
        return int(value)
    return float(value)


def _outcome_spelling(draw, market: MarketView, side: str) -> str:
    spellings = [side, side.lower(), side.upper()]
    if not market.is_binary:
        from arena.domain.prompting import display_outcome

        spellings.append(display_outcome(side))
    return draw(st.sampled_from(spellings))


@st.composite
def valid_answers(draw, methodology: str):
    ctx = vctx(methodology, cash="10000")
    v2 = methodology == "v2"
    action = draw(st.sampled_from(list(Action)))
    answer: dict = {"action": draw(st.sampled_from([action.value, action.value.lower()]))}
    bets: list[BetOrder] = []
    sells: list[SellOrder] = []
    if action is Action.BET:
        pairs = [(m, s) for m in PANEL for s in m.sides()]
        chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=4, unique=True))
        answer["bets"] = []
        for market, side in chosen:
            amount = Decimal(draw(st.integers(5000, 250000))) / 100
            bet = {
                "market_id": draw(st.sampled_from([market.id, int(market.id)])),
                "side": _outcome_spelling(draw, market, side),
                "amount": _number(draw, amount),
            }
            probability = None
            if v2:
                probability = Decimal(draw(st.integers(0, 1000))) / 1000
                bet["probability"] = _number(draw, probability)
            answer["bets"].append(bet)
            bets.append(BetOrder(market.id, side, amount, probability))
    elif action is Action.SELL:
        chosen_ids = draw(st.lists(st.sampled_from(["p1", "p2"]), min_size=1, unique=True))
        answer["sells"] = []
        for position_id in chosen_ids:
            percentage = Decimal(draw(st.integers(1, 10000))) / 100
            answer["sells"].append(
                {"position_id": position_id, "percentage": _number(draw, percentage)}
            )
            sells.append(SellOrder(position_id, percentage))
    forecasts: list[PanelForecast] = []
    if v2:
        answer["forecasts"] = []
        for market in draw(st.permutations([BIN, TEAM])):
            if market.is_binary:
                p = Decimal(draw(st.integers(0, 100))) / 100
                answer["forecasts"].append(
                    {"market_id": market.id, "probability": _number(draw, p)}
                )
            else:
                p = Decimal(draw(st.integers(0, 100))) / 100
                probabilities = {"Lakers": _number(draw, p), "celtics": _number(draw, 1 - p)}
                answer["forecasts"].append({"market_id": market.id, "probabilities": probabilities})
        forecasts = _expected_forecasts(answer["forecasts"])
    reasoning = draw(st.text(max_size=60))
    answer["reasoning"] = reasoning
    expected = ValidDecision(action, tuple(bets), tuple(sells), reasoning, tuple(forecasts))
    return ctx, answer, expected


def _expected_forecasts(entries: list[dict]) -> list[PanelForecast]:
    by_id = {e["market_id"]: e for e in entries}
    yes = Decimal(str(by_id["559651"]["probability"]))
    team = by_id["601234"]["probabilities"]
    return [
        PanelForecast("559651", "YES", yes),
        PanelForecast("601234", "Lakers", Decimal(str(team["Lakers"]))),
        PanelForecast("601234", "Celtics", Decimal(str(team["celtics"]))),
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["v1", "v2"]).flatmap(valid_answers),
    st.sampled_from(WRAPPERS),
    st.booleans(),
    st.booleans(),
)
def test_valid_decisions_round_trip_through_any_wrapping(case, wrapper, indent, trailing_comma):
    ctx, answer, expected = case
    body = json.dumps(answer, indent=2 if indent else None, ensure_ascii=False)
    if trailing_comma:
        body = body[:-1].rstrip() + ",}"
    text = wrapper.replace("{}", body, 1) if wrapper != "{}" else body
    payload, decision = parse_decision(text, ctx)
    assert payload == answer
    assert decision == expected


# --- property: nothing but MalformedResponse escapes, whatever comes back ------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = [
    "action",
    "bets",
    "sells",
    "market_id",
    "side",
    "amount",
    "position_id",
    "percentage",
    "forecasts",
    "probability",
    "probabilities",
    "reasoning",
]
ANSWER_LIKE = st.recursive(
    st.sampled_from(["BET", "SELL", "HOLD", "559651", "601234", "p1", "YES", "Lakers"])
    | st.integers(-5, 3000)
    | st.floats()
    | st.none(),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(FIELDS), children, max_size=5)
    ),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["v1", "v2"]), JSON_VALUES | ANSWER_LIKE)
def test_validation_only_ever_raises_malformed_response(methodology, payload):
    if not isinstance(payload, dict):
        payload = {"action": "BET", "bets": payload, "forecasts": payload}
    message = ""
    try:
        validate_decision(payload, vctx(methodology))
    except MalformedResponse as exc:
        message = str(exc) or "(empty message)"
    assert "(empty message)" not in message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("{}[]\",:'\\ abtrue0.5\n`")), max_size=80))
def test_extraction_only_ever_raises_malformed_response(text):
    try:
        found = extract_json_object(text)
    except MalformedResponse as exc:
        found = {"error": str(exc)}
    assert isinstance(found, dict)
