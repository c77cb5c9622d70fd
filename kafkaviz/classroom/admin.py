from django.contrib import admin

from .models import Member, Room


class MemberInline(admin.TabularInline):
    model = Member
    extra = 0
    fields = ("name", "can_control", "connections", "joined")
    readonly_fields = ("connections", "joined")


@admin.register(Room)
class RoomAdmin(admin.ModelAdmin):
    list_display = ("code", "lesson", "instructor", "created", "closed")
    list_filter = ("lesson",)
    readonly_fields = ("code", "sandbox_id", "created")
    exclude = ("run",)
    inlines = [MemberInline]
