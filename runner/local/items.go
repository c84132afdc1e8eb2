package local

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// This file is the local driver's side of loops over items (docs/loops.md,
// "Keys" and "Instances"): it evaluates a loop's list and keys, and gives each instance
// its item — in its expressions (as:, index_as:, steps.<body step> for
// this item's instances) and in its session's environment (FLOW_ITEM,
// FLOW_ITEM_KEY, FLOW_ITEM_INDEX).

// stepOf returns the workflow step of a key: a step, or the body step
// of an instance.
func (x *run) stepOf(key core.StepKey) *config.Step {
	return x.wf.Step(key.Step)
}

// itemOf returns the item of an instance: its index in the loop, and
// its value as recorded; ok is false for a plain step.
func (x *run) itemOf(k core.StepKey) (_ core.StepKey, index int, raw json.RawMessage, ok bool) {
	if !k.IsInstance() {
		return k, 0, nil, false
	}
	ls := x.st.Steps[core.Key(k.Loop)]
	if ls == nil {
		return k, 0, nil, false
	}
	for i, it := range ls.Items {
		if it.Key == k.Item {
			if i < len(ls.LoopItems) {
				raw = ls.LoopItems[i]
			}
			return k, i, raw, true
		}
	}
	return k, 0, nil, false
}

// itemEnv returns the environment variables of an instance's session:
// the item as JSON, its key and its index; none for a plain step.
func (x *run) itemEnv(key core.StepKey, sessionDir string) []string {
	k, i, raw, ok := x.itemOf(key)
	if !ok {
		return nil
	}
	env := []string{"FLOW_ITEM_KEY=" + k.Item, "FLOW_ITEM_INDEX=" + strconv.Itoa(i)}
	// Linux caps one environment string at 128 KiB: a larger item is
	// only in its file, as a large prompt is.
	if len(raw) <= MaxEnvPrompt {
		env = append(env, "FLOW_ITEM="+string(raw))
	}
	if sessionDir != "" {
		path := filepath.Join(sessionDir, "item.json")
		if err := record.WriteFile(x.rec, path, x.redact.Bytes(raw)); err == nil {
			env = append(env, "FLOW_ITEM_FILE="+path)
		}
	}
	return env
}

// fillItem puts an instance's item into its expression environment:
// the item and its index, and steps.<body step> as this item's
// instances.
func (x *run) fillItem(e *gates.Env, key core.StepKey, runWide bool) {
	k, i, raw, ok := x.itemOf(key)
	if !ok {
		return
	}
	e.Index = i
	if len(raw) > 0 {
		var v any
		if err := json.Unmarshal(raw, &v); err == nil {
			e.Item = v
		}
	}
	if !runWide {
		return
	}
	loop := x.wf.Step(k.Loop)
	if loop == nil || loop.ForEach == nil {
		return
	}
	for _, b := range loop.ForEach.Body {
		id := core.Instance(k.Loop, k.Item, b.ID)
		if s := x.st.Steps[id]; s != nil {
			e.Steps[b.ID] = x.stepInfo(id, s)
		}
	}
}

// loopItemsInfo returns steps.<loop>.items: each item's key, index,
// value and status, and its instances' facts under their body step ids.
func (x *run) loopItemsInfo(loop *config.Step, s *core.StepState) []map[string]any {
	out := make([]map[string]any, 0, len(s.Items))
	for i, it := range s.Items {
		m := map[string]any{"key": it.Key, "index": i, "status": string(it.Status)}
		if ws := x.st.Workspaces[core.ItemScope(loop.ID, it.Key)]; ws != nil {
			// An item with a worktree: where its work is.
			m["branch"], m["commit"], m["merge"] = ws.Branch, ws.Commit, ws.Merge
		}
		if i < len(s.LoopItems) {
			var v any
			if json.Unmarshal(s.LoopItems[i], &v) == nil {
				m["item"] = v
			}
		}
		for _, b := range loop.ForEach.Body {
			id := core.Instance(loop.ID, it.Key, b.ID)
			if is := x.st.Steps[id]; is != nil {
				m[b.ID] = x.stepInfo(id, is).Map()
			}
		}
		out = append(out, m)
	}
	return out
}

// itemLimit returns the most items loop step id may have, as the plan
// says and the core checks; 0 when the plan has no such loop.
func (x *run) itemLimit(id core.StepKey) int {
	if ps := x.plan.Step(id.Step); ps != nil && ps.ForEach != nil && !id.IsInstance() {
		return ps.ForEach.MaxItems
	}
	return 0
}

// expandItems evaluates a loop step's list of items and the key of
// each, for the core to record.
func (x *run) expandItems(id core.StepKey) core.Input {
	s := x.wf.Step(id.Step)
	if s == nil || s.ForEach == nil || id.IsInstance() {
		return core.ItemsResult{Step: id, Err: fmt.Sprintf("step %s is not a for_each loop in the workflow", id)}
	}
	fe := s.ForEach
	var list []any
	if fe.Items != nil {
		v, err := fe.Items.Program().Eval(x.env(&stepFacts{step: id, attempt: x.st.Steps[id].Attempts + 1, iteration: x.st.Steps[id].IterationCount}))
		if err != nil {
			return core.ItemsResult{Step: id, Err: exprError("for_each", fe.Items, err)}
		}
		l, ok := asList(v)
		if !ok {
			return core.ItemsResult{Step: id, Err: fmt.Sprintf("%s: for_each: `%s` is %s, not a list", posString(fe.Items.Pos), excerptSource(fe.Items.Src), typeName(v))}
		}
		list = l
	} else {
		list = fe.List
	}
	// The core refuses a list beyond the loop's limit, the plan's
	// (core.PlanLoop.MaxItems); one item past it is enough for it to,
	// and spares recording a huge list's items.
	total := len(list)
	if limit := x.itemLimit(id); limit > 0 && total > limit+1 {
		list = list[:limit+1]
	}
	items := make([]core.LoopItem, 0, len(list))
	for i, v := range list {
		raw, err := json.Marshal(v)
		if err != nil {
			return core.ItemsResult{Step: id, Err: fmt.Sprintf("for_each: item %d cannot be recorded as JSON: %v", i, err)}
		}
		key := strconv.Itoa(i)
		if fe.Key != nil {
			env := x.env(&stepFacts{step: id})
			env.Item, env.Index = v, i
			kv, err := fe.Key.Program().Eval(env)
			if err != nil {
				return core.ItemsResult{Step: id, Err: fmt.Sprintf("item %d: %s", i, exprError("key", fe.Key, err))}
			}
			switch kv := kv.(type) {
			case string:
				key = kv
			case int, int64, float64:
				key = fmt.Sprint(kv)
			default:
				return core.ItemsResult{Step: id, Err: fmt.Sprintf("item %d: %s: key: `%s` is %s; a key is a string or a number", i, posString(fe.Key.Pos), excerptSource(fe.Key.Src), typeName(kv))}
			}
		}
		items = append(items, core.LoopItem{Key: key, Value: raw})
	}
	where := posString(fe.Pos) + ": for_each"
	if fe.Key != nil {
		where = posString(fe.Key.Pos) + ": key"
	}
	return core.ItemsResult{Step: id, Items: items, Total: total, Where: where}
}

// typeName names the type of an expression's value for a message.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int, int64, float64:
		return "a number"
	case map[string]any:
		return "a map"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
}

// asList returns an expression's value as a list: a []any as it is,
// any other slice or array (1..10 is an []int) element by element.
func asList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	l := make([]any, rv.Len())
	for i := range l {
		l[i] = rv.Index(i).Interface()
	}
	return l, true
}
